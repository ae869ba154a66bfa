// Reload cost of `seam serve` with many mcp.stdio mounts.
//
//   node bench/reload.mjs --seam PATH --out DIR [--quick]
//
// A composition of BENCH_MOUNTS (100) mounts m0..m99 of tests/peers/flaky-mcp-server.mjs
// (each with FLAKY_TOOLS=t<i> and FLAKY_PID_FILE=DIR/pids/m<i>.pids) is served
// over Streamable HTTP; SDK clients connect to it.
//  (a) BENCH_RELOADS (100) edits of mount 42's env (FLAKY_TOOLS alternating
//      `t42` / `t42,t42x`): time from the write to `notifications/tools/list_changed`
//      at a client; processes started per edit (new pids over ALL pid files: must
//      be 1); meanwhile BENCH_CALLERS (8) other clients call mcp__m1__t1 without pause
//      (failed calls must be 0).
//  (b) BENCH_TOGGLES (50) edits that start no process: mount 7's
//      `tools: {deny: [t7]}` on/off, and the top-level `tools: {mcp__m7__t7: false}`
//      on/off; write → list_changed, at the default debounce (100ms) and at
//      --debounce 20ms (a second seam run).
//  (c) VmRSS of the seam process alone with the mounts, and of
//      `seam serve compositions/base.yaml --transport http` right after it serves.
// Each file edit is written to a temporary file beside the composition and
// renamed over it (an editor's atomic save), so no reload ever reads half a file.
// Prints Markdown tables; writes DIR/reload.json and DIR/reload.md.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const sdk = new URL('../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdk));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdk));
const { ToolListChangedNotificationSchema } = await import(new URL('types.js', sdk));

// undici's fetch adds one abort listener per request to the SDK transport's shared
// AbortSignal and drops it only when the request is garbage-collected, so a long
// run trips Node's MaxListenersExceededWarning now and then: client-side noise.
process.removeAllListeners('warning');
process.on('warning', (w) => { if (w.name !== 'MaxListenersExceededWarning') console.error(w); });

const argv = process.argv.slice(2);
const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const QUICK = argv.includes('--quick');
const SEAM = path.resolve(opt('--seam') ?? path.join(root, 'target/bench-build/release/seam'));
const OUT = path.resolve(opt('--out') ?? path.join(root, 'target/bench-data/reload'));
const MOUNTS = Number(process.env.BENCH_MOUNTS ?? 100);
const RELOADS = Number(process.env.BENCH_RELOADS ?? (QUICK ? 10 : 100));
const TOGGLES = Number(process.env.BENCH_TOGGLES ?? (QUICK ? 10 : 50));
const CALLERS = Number(process.env.BENCH_CALLERS ?? 8);
const EDITED = 42 % MOUNTS; // (a) edits this mount
const FILTERED = 7 % MOUNTS; // (b) filters this mount's tool
const CALLED = 1 % MOUNTS; // the callers call this mount's tool
const FLAKY = path.join(root, 'tests/peers/flaky-mcp-server.mjs');
// seam starts every mount at once: 100 Node servers (≈0.35 s CPU each) on 2 cores
// all miss the default 10s startup_timeout together, so the mounts get a longer one.
const STARTUP_TIMEOUT = process.env.BENCH_STARTUP_TIMEOUT ?? '120s';
const LIST_CHANGED_TIMEOUT_MS = 15000;
const SETTLE_MS = 250; // after list_changed: late extra notifications and late process starts are counted

const log = (...a) => console.error('[reload]', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
fs.rmSync(OUT, { recursive: true, force: true });
const PIDS = path.join(OUT, 'pids');
fs.mkdirSync(PIDS, { recursive: true });
const FILE = path.join(OUT, 'reload.yaml');

// --- The composition ------------------------------------------------------------
function composition({ editedTools = `t${EDITED}`, mountDeny = false, topLevelOff = false } = {}) {
  const q = JSON.stringify;
  const out = ['seam: 1', 'name: bench-reload', 'mounts:'];
  for (let i = 0; i < MOUNTS; i++) {
    out.push(`  m${i}:`, '    kind: mcp.stdio', `    command: ${q(process.execPath)}`, `    args: [${q(FLAKY)}]`, `    startup_timeout: ${STARTUP_TIMEOUT}`);
    out.push('    env:', `      FLAKY_TOOLS: ${q(i === EDITED ? editedTools : `t${i}`)}`, `      FLAKY_PID_FILE: ${q(path.join(PIDS, `m${i}.pids`))}`);
    if (i === FILTERED && mountDeny) out.push(`    tools: { deny: [t${FILTERED}] }`);
  }
  if (topLevelOff) out.push('tools:', `  ${q(`mcp__m${FILTERED}__t${FILTERED}`)}: false`);
  return out.join('\n') + '\n';
}

function writeAtomic(text) {
  const tmp = path.join(OUT, '.reload.yaml.tmp');
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, FILE);
}

function pidCounts() {
  const counts = new Map();
  for (let i = 0; i < MOUNTS; i++) {
    let n = 0;
    try { n = fs.readFileSync(path.join(PIDS, `m${i}.pids`), 'utf8').split('\n').filter(Boolean).length; } catch { /* none yet */ }
    counts.set(i, n);
  }
  return counts;
}
const totalOf = (c) => [...c.values()].reduce((a, b) => a + b, 0);
function newPids(before, after) {
  const by = [];
  for (const [i, n] of after) if (n > (before.get(i) ?? 0)) by.push(`m${i}+${n - (before.get(i) ?? 0)}`);
  return { total: totalOf(after) - totalOf(before), by };
}
function livePids() {
  let live = 0;
  for (let i = 0; i < MOUNTS; i++) {
    let lines = [];
    try { lines = fs.readFileSync(path.join(PIDS, `m${i}.pids`), 'utf8').split('\n').filter(Boolean); } catch { /* none */ }
    for (const p of lines) { try { process.kill(Number(p), 0); live++; } catch { /* dead */ } }
  }
  return live;
}

function rssKb(pid) {
  try { return Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m)[1]); } catch { return null; }
}

function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
function stats(xs) {
  const s = Float64Array.from(xs).sort();
  return { n: xs.length, p50: percentile(s, 0.5), p95: percentile(s, 0.95), p99: percentile(s, 0.99), max: s.length ? s[s.length - 1] : NaN, min: s.length ? s[0] : NaN };
}

// --- seam ---------------------------------------------------------------------------
async function startSeam(file, extra = [], name = 'seam') {
  const errPath = path.join(OUT, `${name}.stderr.log`);
  const t0 = performance.now();
  const child = spawn(SEAM, ['serve', file, '--transport', 'http', '--listen', '127.0.0.1:0', ...extra], {
    cwd: OUT, stdio: ['ignore', 'ignore', 'pipe'], detached: true,
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; fs.appendFileSync(errPath, d); });
  child.exited = new Promise((r) => child.once('exit', (code, sig) => r({ code, sig })));
  const url = await new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const m = stderr.match(/serving agent `[^`]*` at (http:\/\/\S+\/mcp)/);
      if (m) { clearInterval(timer); resolve(new URL(m[1])); }
      if (child.exitCode !== null) { clearInterval(timer); reject(new Error(`seam exited ${child.exitCode}: ${stderr.slice(-2000)}`)); }
    }, 10);
    setTimeout(() => { clearInterval(timer); reject(new Error(`seam did not serve within 180s: ${stderr.slice(-2000)}`)); }, 180000);
  });
  return { child, url, servingMs: performance.now() - t0, stderr: () => stderr, errPath };
}

async function stopSeam(s) {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  try { process.kill(-s.child.pid, 'SIGTERM'); } catch { return; }
  const r = await Promise.race([s.child.exited, sleep(20000).then(() => 'timeout')]);
  if (r === 'timeout') { log(`seam ${s.child.pid} ignored SIGTERM for 20s; SIGKILL`); try { process.kill(-s.child.pid, 'SIGKILL'); } catch { /* gone */ } await s.child.exited; }
}

function problems(text) {
  return text.split('\n').filter((l) => /\b(ERROR|WARN)\b/.test(l));
}

async function connect(url, label) {
  const client = new Client({ name: `seam-bench-reload-${label}`, version: '0.1.0' });
  const state = { received: 0, at: [] };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { state.received++; state.at.push(performance.now()); });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(url));
  return { client, state };
}

async function listAll(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

function waitNotification(state, from, timeoutMs) {
  return new Promise((resolve) => {
    const deadline = performance.now() + timeoutMs;
    const tick = () => {
      if (state.received > from) return resolve(state.at[from]);
      if (performance.now() > deadline) return resolve(null);
      setTimeout(tick, 1);
    };
    tick();
  });
}

// One timed edit: write, wait for list_changed, settle, then check what the client sees.
async function timedEdit(watcher, text, check) {
  const before = pidCounts();
  const from = watcher.state.received;
  const t0 = performance.now();
  writeAtomic(text);
  const at = await waitNotification(watcher.state, from, LIST_CHANGED_TIMEOUT_MS);
  await sleep(SETTLE_MS);
  const notifications = watcher.state.received - from;
  const started = newPids(before, pidCounts());
  let visible = null;
  if (check) visible = check(await listAll(watcher.client));
  return { ms: at === null ? null : at - t0, notifications, started, visible };
}

// Callers: each its own client connection, calling without pause until stopped.
function startCallers(url, n) {
  const tool = `mcp__m${CALLED}__t${CALLED}`;
  const res = { ok: 0, failed: 0, errors: [], lat: [] };
  let stop = false;
  const clients = [];
  const done = (async () => {
    for (let i = 0; i < n; i++) clients.push((await connect(url, `caller-${i}`)).client);
    await Promise.all(clients.map(async (c, i) => {
      let k = 0;
      while (!stop) {
        const message = `c${i}-${k++}`;
        const t0 = performance.now();
        try {
          const r = await c.callTool({ name: tool, arguments: { message } });
          const text = r?.content?.[0]?.text;
          if (r?.isError || text !== `t${CALLED}: ${message}`) throw new Error(`unexpected result ${JSON.stringify(r).slice(0, 200)}`);
          res.ok++;
          res.lat.push(performance.now() - t0);
        } catch (e) {
          res.failed++;
          if (res.errors.length < 20) res.errors.push(`${new Date().toISOString()} ${e.message}`);
        }
      }
    }));
  })();
  return { res, ready: () => clients.length === n, stop: async () => { stop = true; await done; await Promise.all(clients.map((c) => c.close().catch(() => {}))); } };
}

// --- Runs -----------------------------------------------------------------------------
const report = { mounts: MOUNTS, reloads: RELOADS, toggles: TOGGLES, callers: CALLERS, settleMs: SETTLE_MS };

async function runToggles(watcher, label) {
  const out = {};
  for (const variant of ['mount', 'top']) {
    const rows = [];
    for (let k = 0; k < TOGGLES; k++) {
      const on = k % 2 === 0; // on: t7 hidden
      const text = composition(variant === 'mount' ? { mountDeny: on } : { topLevelOff: on });
      const want = `mcp__m${FILTERED}__t${FILTERED}`;
      rows.push(await timedEdit(watcher, text, (names) => names.includes(want) === !on));
    }
    if (TOGGLES % 2 === 1) writeAtomic(composition()); // leave the file as it began
    await sleep(SETTLE_MS);
    out[variant] = summarize(rows);
    log(`${label} ${variant}: p50 ${out[variant].ms.p50?.toFixed(1)} ms, started ${out[variant].startedTotal}, notifications ${out[variant].notifications}`);
  }
  return out;
}

function summarize(rows) {
  const ok = rows.filter((r) => r.ms !== null);
  return {
    ms: stats(ok.map((r) => r.ms)),
    timeouts: rows.length - ok.length,
    notifications: rows.reduce((a, r) => a + r.notifications, 0),
    notificationsPerEdit: [...new Set(rows.map((r) => r.notifications))].sort(),
    startedTotal: rows.reduce((a, r) => a + r.started.total, 0),
    startedPerEdit: [...new Set(rows.map((r) => r.started.total))].sort(),
    startedOther: [...new Set(rows.flatMap((r) => r.started.by))].slice(0, 20),
    invisible: rows.filter((r) => r.visible === false).length,
    rows: rows.map((r) => ({ ms: r.ms, n: r.notifications, started: r.started.total, by: r.started.by.join(' '), visible: r.visible })),
  };
}

let seam;
try {
  // (c) first: RSS of base.yaml, with no mounts of ours running yet.
  {
    const s = await startSeam(path.join(root, 'compositions/base.yaml'), [], 'seam-base');
    await sleep(500);
    report.base = { servingMs: s.servingMs, rssKb: rssKb(s.child.pid), problems: problems(s.stderr()) };
    await stopSeam(s);
    log(`base.yaml: serving after ${s.servingMs.toFixed(0)} ms, RSS ${(report.base.rssKb / 1024).toFixed(1)} MB`);
  }

  // 100 mounts, default debounce.
  writeAtomic(composition());
  seam = await startSeam(FILE, [], 'seam-100');
  report.startup = { servingMs: seam.servingMs };
  const watcher = await connect(seam.url, 'watcher');
  const tools = await listAll(watcher.client);
  report.startup.tools = tools.length;
  report.startup.processes = totalOf(pidCounts());
  report.startup.rssKb = rssKb(seam.child.pid);
  log(`100 mounts: serving after ${seam.servingMs.toFixed(0)} ms, ${tools.length} tools, ${report.startup.processes} processes, RSS ${(report.startup.rssKb / 1024).toFixed(1)} MB`);
  const wantCalled = `mcp__m${CALLED}__t${CALLED}`;
  if (!tools.includes(wantCalled)) throw new Error(`no ${wantCalled} among ${tools.length} tools`);
  await sleep(1000);

  // (a) env edits of mount EDITED with callers running.
  const callers = startCallers(seam.url, CALLERS);
  while (!callers.ready()) await sleep(50);
  await sleep(500);
  const beforeA = callers.res.ok;
  const rowsA = [];
  const rssSeries = [[0, rssKb(seam.child.pid)]];
  const extra = `mcp__m${EDITED}__t${EDITED}x`;
  for (let k = 0; k < RELOADS; k++) {
    const withExtra = k % 2 === 0;
    const text = composition({ editedTools: withExtra ? `t${EDITED},t${EDITED}x` : `t${EDITED}` });
    rowsA.push(await timedEdit(watcher, text, (names) => names.includes(extra) === withExtra));
    if ((k + 1) % 10 === 0) rssSeries.push([k + 1, rssKb(seam.child.pid)]);
    if ((k + 1) % 10 === 0) log(`(a) ${k + 1}/${RELOADS}: last ${rowsA.at(-1).ms?.toFixed(1)} ms, callers ok ${callers.res.ok} failed ${callers.res.failed}`);
  }
  await sleep(500);
  await callers.stop();
  report.a = summarize(rowsA);
  report.a.calls = { ok: callers.res.ok, duringEdits: callers.res.ok - beforeA, failed: callers.res.failed, errors: callers.res.errors, latMs: stats(callers.res.lat) };
  report.a.rssKb = rssKb(seam.child.pid);
  report.a.rssSeriesKb = rssSeries;
  // Retired processes: every mount but the edited one must still run its first process,
  // and only the newest of the edited mount's processes may still run.
  await sleep(1000);
  report.a.liveProcesses = livePids();

  // (b) at the default debounce.
  report.b100 = await runToggles(watcher, '(b) debounce 100ms');
  report.rssAfterKb = rssKb(seam.child.pid);
  await watcher.client.close().catch(() => {});
  await stopSeam(seam);
  report.problems100 = problems(seam.stderr());

  // (b) at --debounce 20ms.
  writeAtomic(composition());
  seam = await startSeam(FILE, ['--debounce', '20ms'], 'seam-100-debounce20');
  const watcher20 = await connect(seam.url, 'watcher20');
  await listAll(watcher20.client);
  await sleep(1000);
  report.b20 = await runToggles(watcher20, '(b) debounce 20ms');
  await watcher20.client.close().catch(() => {});
  await stopSeam(seam);
  report.problems20 = problems(seam.stderr());
  seam = null;
} finally {
  if (seam) await stopSeam(seam);
}

// --- Report -----------------------------------------------------------------------------
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const mb = (kb) => (kb == null ? '–' : (kb / 1024).toFixed(1));
const L = [];
L.push(`seam serve over Streamable HTTP, ${MOUNTS} mcp.stdio mounts of tests/peers/flaky-mcp-server.mjs (each \`startup_timeout: ${STARTUP_TIMEOUT}\`); start to serving line ${f1(report.startup.servingMs)} ms; ${report.startup.tools} tools; ${report.startup.processes} processes.`);
L.push('Edits are written to a temporary file and renamed over the composition; times are from just before that write to `notifications/tools/list_changed` arriving at an SDK client.');
L.push('');
L.push(`### (a) env edit of mount m${EDITED} (FLAKY_TOOLS alternating t${EDITED} / t${EDITED},t${EDITED}x), ${RELOADS} edits, ${CALLERS} clients calling mcp__m${CALLED}__t${CALLED} throughout`);
L.push('');
L.push('| edits | write→list_changed p50 ms | p95 ms | max ms | timeouts | processes started (total; per edit) | list_changed per edit | change not visible after | calls ok | calls failed | caller latency p50 / p99 / max ms |');
L.push('| ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- |');
{
  const a = report.a;
  L.push(`| ${RELOADS} | ${f1(a.ms.p50)} | ${f1(a.ms.p95)} | ${f1(a.ms.max)} | ${a.timeouts} | ${a.startedTotal}; {${a.startedPerEdit.join(',')}}${a.startedOther.some((s) => !s.startsWith(`m${EDITED}+`)) ? ` (${a.startedOther.join(' ')})` : ''} | {${a.notificationsPerEdit.join(',')}} | ${a.invisible} | ${a.calls.ok} | ${a.calls.failed} | ${f1(a.calls.latMs.p50)} / ${f1(a.calls.latMs.p99)} / ${f1(a.calls.latMs.max)} |`);
}
L.push('');
L.push(`Live flaky processes after (a): ${report.a.liveProcesses} (expected ${MOUNTS}).`);
if (report.a.calls.errors.length) L.push(`First caller errors: ${report.a.calls.errors.slice(0, 5).join(' | ')}`);
L.push('');
L.push(`### (b) edits that start no process (tool filter toggles on mount m${FILTERED}), ${TOGGLES} edits each, no callers`);
L.push('');
L.push('| debounce | edit | write→list_changed p50 ms | p95 ms | max ms | timeouts | processes started | list_changed per edit | change not visible after |');
L.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |');
for (const [deb, b] of [['100ms (default)', report.b100], ['20ms', report.b20]]) {
  for (const [variant, label] of [['mount', `mount \`tools: {deny: [t${FILTERED}]}\``], ['top', `top-level \`tools: {mcp__m${FILTERED}__t${FILTERED}: false}\``]]) {
    const r = b[variant];
    L.push(`| ${deb} | ${label} | ${f1(r.ms.p50)} | ${f1(r.ms.p95)} | ${f1(r.ms.max)} | ${r.timeouts} | ${r.startedTotal}${r.startedOther.length ? ` (${r.startedOther.join(' ')})` : ''} | {${r.notificationsPerEdit.join(',')}} | ${r.invisible} |`);
  }
}
L.push('');
L.push('### (c) RSS of the seam process alone (VmRSS)');
L.push('');
L.push('| composition | when | RSS MB |');
L.push('| --- | --- | ---: |');
L.push(`| compositions/base.yaml (no MCP mounts) | 500 ms after the serving line | ${mb(report.base.rssKb)} |`);
L.push(`| ${MOUNTS} mcp.stdio mounts | after start, tools listed | ${mb(report.startup.rssKb)} |`);
L.push(`| ${MOUNTS} mcp.stdio mounts | after (a): ${RELOADS} reloads, ${CALLERS} callers | ${mb(report.a.rssKb)} |`);
L.push(`| ${MOUNTS} mcp.stdio mounts | after (b) at 100ms too | ${mb(report.rssAfterKb)} |`);
L.push('');
L.push(`RSS MB during (a), after N edits: ${report.a.rssSeriesKb.map(([n, kb]) => `${n}: ${mb(kb)}`).join(', ')}`);
L.push('');
const probs = [...(report.base.problems ?? []), ...(report.problems100 ?? []), ...(report.problems20 ?? [])];
L.push(`WARN/ERROR lines in seam's stderr: ${probs.length}${probs.length ? ' (first: ' + probs.slice(0, 5).map((p) => p.slice(0, 300)).join(' | ') + ')' : ''}`);
const text = L.join('\n');
console.log(text);
fs.writeFileSync(path.join(OUT, 'reload.json'), JSON.stringify(report, null, 2));
fs.writeFileSync(path.join(OUT, 'reload.md'), text + '\n');
log(`wrote ${path.join(OUT, 'reload.json')} and reload.md`);
const bad = report.a.calls.failed || report.a.startedTotal !== RELOADS || report.a.timeouts || report.b100.mount.timeouts || report.b100.top.timeouts;
process.exit(bad ? 1 : 0);
