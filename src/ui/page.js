// seam status page: puts the sections /events sends in place. The server
// renders every section; this script only swaps them in, keeping what the
// reader had open and where the keyboard was, and says when the page is live.
(() => {
  'use strict';
  const live = document.getElementById('live');
  const announce = document.getElementById('announce');
  const show = (text, cls) => { live.textContent = text; live.className = 'pill ' + cls; };
  let outcomeAt = document.body.dataset.outcomeAt || '';

  // The key of what has focus inside a section (its <details>, or its own id), to give focus back after a swap.
  const focusKey = (body) => {
    const active = document.activeElement;
    if (!active || !body.contains(active)) return null;
    const keyed = active.closest('[data-key]');
    return keyed ? { key: keyed.dataset.key, summary: active.tagName === 'SUMMARY' } : null;
  };

  const apply = (sections, news) => {
    for (const [name, html] of Object.entries(sections)) {
      const body = document.querySelector(`[data-section="${name}"]`);
      if (!body) continue;
      const details = [...body.querySelectorAll('details[data-key]')];
      const open = new Set(details.filter((d) => d.open).map((d) => d.dataset.key));
      const shut = new Set(details.filter((d) => !d.open).map((d) => d.dataset.key));
      const focused = focusKey(body);
      body.innerHTML = html;
      for (const d of body.querySelectorAll('details[data-key]')) {
        if (open.has(d.dataset.key)) d.open = true;
        if (shut.has(d.dataset.key)) d.open = false;
      }
      if (focused) {
        const again = body.querySelector(`[data-key="${CSS.escape(focused.key)}"]`);
        const target = again && (focused.summary ? again.querySelector('summary') : again);
        if (target) target.focus({ preventScroll: true });
      }
      if (name === 'name') document.title = `${body.textContent} · seam`;
      const card = body.closest('.card');
      if (!news || !card) continue;
      card.classList.remove('flash');
      void card.offsetWidth;
      card.classList.add('flash');
    }
  };

  let retry = 1000;
  const connect = () => {
    const events = new EventSource('/events');
    events.addEventListener('update', (e) => {
      const data = JSON.parse(e.data);
      apply(data.sections || {}, !data.initial);
      // An outcome this page has not shown yet is read out once.
      if (data.outcome_at && data.outcome_at !== outcomeAt) {
        outcomeAt = data.outcome_at;
        if (data.announce) announce.textContent = data.announce;
      }
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    });
    events.onopen = () => { retry = 1000; show('live', 'live'); };
    events.onerror = () => {
      if (events.readyState !== EventSource.CLOSED) {
        show('reconnecting…', 'down'); // the browser retries by itself
        return;
      }
      // Refused (a new token, seam stopped): the browser has given up; try again, more slowly each time.
      show('disconnected: retrying', 'down');
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  };
  show('connecting…', '');
  connect();
})();
