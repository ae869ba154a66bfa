// seam status page: puts the sections /events sends in place. The server
// renders every section; this script keeps no state of its own but which
// <details> are open, so that an update does not fold what you unfolded.
(() => {
  'use strict';
  const live = document.getElementById('live');
  const announce = document.getElementById('announce');
  const show = (text, cls) => { live.textContent = text; live.className = 'pill ' + cls; };

  const apply = (sections, news) => {
    for (const [name, html] of Object.entries(sections)) {
      const body = document.querySelector(`[data-section="${name}"]`);
      if (!body) continue;
      const open = new Set([...body.querySelectorAll('details[data-key]')].map((d) => [d.dataset.key, d.open]).filter(([, o]) => o).map(([k]) => k));
      const shut = new Set([...body.querySelectorAll('details[data-key]')].filter((d) => !d.open).map((d) => d.dataset.key));
      body.innerHTML = html;
      for (const d of body.querySelectorAll('details[data-key]')) {
        if (open.has(d.dataset.key)) d.open = true;
        if (shut.has(d.dataset.key)) d.open = false;
      }
      if (!news) continue;
      const card = body.closest('.card');
      card.classList.remove('flash');
      void card.offsetWidth;
      card.classList.add('flash');
    }
  };

  const connect = () => {
    const events = new EventSource('/events');
    events.addEventListener('update', (e) => {
      const data = JSON.parse(e.data);
      apply(data.sections || {}, !data.initial);
      if (data.announce) announce.textContent = data.announce;
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    });
    events.onopen = () => show('live', 'live');
    // The browser reconnects by itself; say so meanwhile.
    events.onerror = () => show('reconnecting…', 'down');
  };
  show('connecting…', '');
  connect();
})();
