// A real browser for the tests: Debian's Chromium, headless, driven by
// playwright-core (which downloads nothing when given the executable). A line
// protocol over stdin/stdout, one JSON command per line, one JSON answer each:
//   {op:"goto", url}                       → {ok, status}
//   {op:"wait", selector, text?, gone?, timeout_ms}
//                                          → {ok, ms}: until the selector matches (and its text has `text`),
//                                            or until it matches nothing (`gone: true`)
//   {op:"text", selector}                  → {ok, text}: the first match's textContent
//   {op:"count", selector}                 → {ok, count}
//   {op:"attr", selector, name}            → {ok, value}
//   {op:"mark"}                            → {ok}: sets a mark on the page's window
//   {op:"marked"}                          → {ok, marked}: whether the mark is still there (no reload since)
//   {op:"screenshot", path}                → {ok}: the whole page, as PNG
//   {op:"focus_order", count}              → {ok, order}: what Tab reaches, in order
//   {op:"close"}                           → {ok}
// Chromium gets the flags that keep it off the network.
const playwright = new URL('../../.cache/peers/node_modules/playwright-core/index.mjs', import.meta.url);
const { chromium } = await import(playwright);

const out = (obj) => new Promise((r) => process.stdout.write(JSON.stringify(obj) + '\n', r));
const browser = await chromium.launch({
  executablePath: process.env.SEAM_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: process.env.SEAM_COLOR_SCHEME || 'light' });
const page = await context.newPage();
page.on('console', (m) => { if (m.type() === 'error') console.error('[page]', m.text()); });
page.on('pageerror', (e) => console.error('[page error]', e.message));

async function handle(cmd) {
  switch (cmd.op) {
    case 'goto': {
      const response = await page.goto(cmd.url, { waitUntil: 'domcontentloaded' });
      return { ok: true, status: response ? response.status() : null };
    }
    case 'wait': {
      const start = Date.now();
      await page.waitForFunction(({ selector, text, gone }) => {
        const found = document.querySelectorAll(selector);
        if (gone) return found.length === 0;
        return [...found].some((e) => text === undefined || e.textContent.includes(text));
      }, { selector: cmd.selector, text: cmd.text, gone: cmd.gone || false }, { timeout: cmd.timeout_ms || 30000, polling: 50 });
      return { ok: true, ms: Date.now() - start };
    }
    case 'text':
      return { ok: true, text: await page.$eval(cmd.selector, (e) => e.textContent) };
    case 'count':
      return { ok: true, count: await page.$$eval(cmd.selector, (es) => es.length) };
    case 'attr':
      return { ok: true, value: await page.$eval(cmd.selector, (e, n) => e.getAttribute(n), cmd.name) };
    case 'mark':
      await page.evaluate(() => { window.__seamMark = true; });
      return { ok: true };
    case 'marked':
      return { ok: true, marked: await page.evaluate(() => window.__seamMark === true) };
    case 'screenshot':
      await page.screenshot({ path: cmd.path, fullPage: true });
      return { ok: true };
    case 'focus_order': {
      const order = [];
      await page.evaluate(() => document.activeElement && document.activeElement.blur());
      for (let i = 0; i < cmd.count; i++) {
        await page.keyboard.press('Tab');
        order.push(await page.evaluate(() => {
          const e = document.activeElement;
          return e ? `${e.tagName.toLowerCase()}${e.textContent ? ':' + e.textContent.trim().slice(0, 40) : ''}` : null;
        }));
      }
      // Leave the page as a reader would see it, focus nowhere.
      await page.evaluate(() => document.activeElement && document.activeElement.blur());
      return { ok: true, order };
    }
    case 'close':
      await browser.close();
      return { ok: true };
    default:
      return { ok: false, error: `unknown op: ${cmd.op}` };
  }
}

// Commands run one at a time, in order, even when several lines arrive at once.
const readline = await import('node:readline');
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let cmd;
  try { cmd = JSON.parse(line); } catch (e) { await out({ ok: false, error: `bad json: ${e.message}` }); continue; }
  try {
    await out(await handle(cmd));
  } catch (e) {
    await out({ ok: false, error: e?.message ?? String(e) });
  }
  if (cmd.op === 'close') process.exit(0);
}
await browser.close().catch(() => {});
process.exit(0);
