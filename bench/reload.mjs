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
//  (d) the same as (a) through mcp-hub 4.2.1 --watch, the peer with a config
//      reload: the same 100 servers in its JSON config, the same env edit,
//      write → `notifications/tools/list_changed` at an SSE client, and 8 SSE
//      clients calling m1__t1 throughout (offline and loopback-only, see
//      bench/mcp-hub.mjs). --no-mcp-hub leaves it out.
// Each file edit is written to a temporary file beside the composition and
// renamed over it (an editor's atomic save), so no reload ever reads half a file.
// Prints Markdown tables; writes DIR/reload.json and DIR/reload.md.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const sdk = new URL('../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdk));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdk));
const { SSEClientTransport } = await import(new URL('client/sse.js', sdk));
const { ToolListChangedNotificationSchema } = await import(new URL('types.js', sdk));
const { mcpHubHome, mcpHubCommand, mcpHubReady, checkLoopbackOnly } = await import('./mcp-hub.mjs');

// undici's fetch adds one abort listener per request to the SDK transport's shared
// AbortSignal and drops it only when the request is garbage-collected, so a long
// run trips Node's MaxListenersExceededWarning now and then: client-side noise.
process.removeAllListeners('warning');
process.on('warning', (w) => { if (w.name !== 'MaxListenersExceededWarning') console.error(w); });

const argv = process.argv.slice(2);
const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const QUICK = argv.includes('--quick');
const WITH_HUB = !argv.includes('--no-mcp-hub');
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

// The same servers as mcp-hub's config (mcp-hub names their tools `m<i>__t<i>`).
const HUB_FILE = path.join(OUT, 'mcp-hub.json');
function hubConfig({ editedTools = `t${EDITED}` } = {}) {
  const mcpServers = {};
  for (let i = 0; i < MOUNTS; i++) {
    mcpServers[`m${i}`] = {
      command: process.execPath, args: [FLAKY],
      env: { FLAKY_TOOLS: i === EDITED ? editedTools : `t${i}`, FLAKY_PID_FILE: path.join(PIDS, `m${i}.pids`) },
    };
  }
  return JSON.stringify({ mcpServers }, null, 2) + '\n';
}

function writeAtomic(text, file = FILE) {
  const tmp = path.join(OUT, `.${path.basename(file)}.tmp`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
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

async function connect(url, label, Transport = StreamableHTTPClientTransport) {
  const client = new Client({ name: `seam-bench-reload-${label}`, version: '0.1.0' });
  const state = { received: 0, at: [] };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { state.received++; state.at.push(performance.now()); });
  client.onerror = () => {};
  await client.connect(new Transport(url));
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
async function timedEdit(watcher, text, check, file = FILE) {
  const before = pidCounts();
  const from = watcher.state.received;
  const t0 = performance.now();
  writeAtomic(text, file);
  const at = await waitNotification(watcher.state, from, LIST_CHANGED_TIMEOUT_MS);
  await sleep(SETTLE_MS);
  const notifications = watcher.state.received - from;
  const started = newPids(before, pidCounts());
  let visible = null;
  if (check) visible = check(await listAll(watcher.client));
  return { ms: at === null ? null : at - t0, notifications, started, visible };
}

// Callers: each its own client connection, calling without pause until stopped.
function startCallers(url, n, { tool = `mcp__m${CALLED}__t${CALLED}`, Transport } = {}) {
  const res = { ok: 0, failed: 0, errors: [], lat: [] };
  let stop = false;
  const clients = [];
  const done = (async () => {
    for (let i = 0; i < n; i++) clients.push((await connect(url, `caller-${i}`, Transport)).client);
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

  // A peer that fails is reported, not allowed to lose seam's own figures.
  if (WITH_HUB) {
    try { report.hub = await runMcpHub(); } catch (e) { log(`(d) mcp-hub FAILED: ${e.stack ?? e}`); report.hubError = String(e.message ?? e); }
  }
} finally {
  if (seam) await stopSeam(seam);
}

// (d): mcp-hub --watch, the same servers and the same edit as (a).
async function runMcpHub() {
  const env = mcpHubHome(path.join(OUT, 'mcp-hub-home'));
  writeAtomic(hubConfig(), HUB_FILE);
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => resolve(p)); });
  });
  const straceLog = path.join(OUT, 'mcp-hub.strace');
  const [command, args] = mcpHubCommand({ port, config: HUB_FILE, straceLog, watch: true });
  const errPath = path.join(OUT, 'mcp-hub.stderr.log');
  const errFd = fs.openSync(errPath, 'w');
  const t0 = performance.now();
  const child = spawn(command, args, { cwd: env.HOME, env: { ...process.env, ...env }, stdio: ['ignore', errFd, errFd], detached: true });
  fs.closeSync(errFd);
  child.exited = new Promise((r) => child.once('exit', (code, sig) => r({ code, sig })));
  const hub = { child };
  const out = {};
  try {
    const names = Array.from({ length: MOUNTS }, (_, i) => `m${i}`);
    const deadline = performance.now() + 300000;
    while (!(await mcpHubReady(port, names))) {
      if (child.exitCode !== null) throw new Error(`mcp-hub exited ${child.exitCode}; see ${errPath}`);
      if (performance.now() > deadline) throw new Error(`mcp-hub not ready with ${MOUNTS} servers within 300 s; see ${errPath}`);
      await sleep(100);
    }
    out.startup = { readyMs: performance.now() - t0, processes: totalOf(pidCounts()) };
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    const watcher = await connect(url, 'hub-watcher', SSEClientTransport);
    const tools = await listAll(watcher.client);
    out.startup.tools = tools.length;
    out.startup.rssKb = rssKb(servingPid(child.pid));
    const called = `m${CALLED}__t${CALLED}`;
    if (!tools.includes(called)) throw new Error(`mcp-hub lists no ${called} among ${tools.length} tools`);
    log(`mcp-hub: ready after ${out.startup.readyMs.toFixed(0)} ms, ${tools.length} tools, RSS ${(out.startup.rssKb / 1024).toFixed(1)} MB`);
    await sleep(1000);
    const callers = startCallers(url, CALLERS, { tool: called, Transport: SSEClientTransport });
    while (!callers.ready()) await sleep(50);
    await sleep(500);
    const before = callers.res.ok;
    const rows = [];
    const extra = `m${EDITED}__t${EDITED}x`;
    for (let k = 0; k < RELOADS; k++) {
      const withExtra = k % 2 === 0;
      const text = hubConfig({ editedTools: withExtra ? `t${EDITED},t${EDITED}x` : `t${EDITED}` });
      rows.push(await timedEdit(watcher, text, (names) => names.includes(extra) === withExtra, HUB_FILE));
      if ((k + 1) % 10 === 0) log(`(d) mcp-hub ${k + 1}/${RELOADS}: last ${rows.at(-1).ms?.toFixed(1)} ms, callers ok ${callers.res.ok} failed ${callers.res.failed}`);
    }
    await sleep(500);
    await callers.stop();
    Object.assign(out, summarize(rows));
    out.calls = { ok: callers.res.ok, duringEdits: callers.res.ok - before, failed: callers.res.failed, errors: callers.res.errors, latMs: stats(callers.res.lat) };
    out.rssKb = rssKb(servingPid(child.pid));
    await sleep(1000);
    out.liveProcesses = livePids();
    await watcher.client.close().catch(() => {});
  } finally {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    const r = await Promise.race([child.exited, sleep(10000).then(() => 'timeout')]);
    if (r === 'timeout') { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } await child.exited; }
  }
  out.loopback = checkLoopbackOnly(straceLog);
  log(`(d) mcp-hub: p50 ${out.ms.p50?.toFixed(1)} ms, calls failed ${out.calls.failed}; ${out.loopback}`);
  return out;
}

// mcp-hub runs under strace: the serving node process is strace's child.
function servingPid(pid) {
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) return Number(d);
    } catch { /* gone */ }
  }
  return pid;
}

// --- Report -----------------------------------------------------------------------------
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const mb = (kb) => (kb == null ? '–' : (kb / 1024).toFixed(1));
const L = [];
L.push(`seam serve over Streamable HTTP, ${MOUNTS} mcp.stdio mounts of tests/peers/flaky-mcp-server.mjs (each \`startup_timeout: ${STARTUP_TIMEOUT}\`); start to serving line ${f1(report.startup.servingMs)} ms; ${report.startup.tools} tools; ${report.startup.processes} processes.`);
L.push('Edits are written to a temporary file and renamed over the composition; times are from just before that write to `notifications/tools/list_changed` arriving at an SDK client.');
L.push('');
L.push(`### (a) env edit of mount m${EDITED} (FLAKY_TOOLS alternating t${EDITED} / t${EDITED},t${EDITED}x), ${RELOADS} edits, ${CALLERS} clients calling mcp__m${CALLED}__t${CALLED} throughout; (d) the same through mcp-hub`);
L.push('');
L.push('| edits, gateway | write→list_changed p50 ms | p95 ms | max ms | timeouts | processes started (total; per edit) | list_changed per edit | change not visible after | calls ok | calls failed | caller latency p50 / p99 / max ms |');
L.push('| ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- |');
{
  const a = report.a;
  L.push(`| ${RELOADS} | ${f1(a.ms.p50)} | ${f1(a.ms.p95)} | ${f1(a.ms.max)} | ${a.timeouts} | ${a.startedTotal}; {${a.startedPerEdit.join(',')}}${a.startedOther.some((s) => !s.startsWith(`m${EDITED}+`)) ? ` (${a.startedOther.join(' ')})` : ''} | {${a.notificationsPerEdit.join(',')}} | ${a.invisible} | ${a.calls.ok} | ${a.calls.failed} | ${f1(a.calls.latMs.p50)} / ${f1(a.calls.latMs.p99)} / ${f1(a.calls.latMs.max)} |`);
}
if (report.hubError) L.push(`| ${RELOADS}, mcp-hub 4.2.1 --watch (d) | FAILED: ${report.hubError.split('\n')[0]} | | | | | | | | | |`);
if (report.hub) {
  const h = report.hub;
  L.push(`| ${RELOADS}, mcp-hub 4.2.1 --watch (d) | ${f1(h.ms.p50)} | ${f1(h.ms.p95)} | ${f1(h.ms.max)} | ${h.timeouts} | ${h.startedTotal}; {${h.startedPerEdit.join(',')}}${h.startedOther.some((x) => !x.startsWith(`m${EDITED}+`)) ? ` (${h.startedOther.join(' ')})` : ''} | {${h.notificationsPerEdit.join(',')}} | ${h.invisible} | ${h.calls.ok} | ${h.calls.failed} | ${f1(h.calls.latMs.p50)} / ${f1(h.calls.latMs.p99)} / ${f1(h.calls.latMs.max)} |`);
}
L.push('');
L.push(`Live flaky processes after (a): ${report.a.liveProcesses} (expected ${MOUNTS})${report.hub ? `; after (d): ${report.hub.liveProcesses}` : ''}.`);
if (report.hub) {
  L.push(`mcp-hub: ready with ${MOUNTS} servers after ${f1(report.hub.startup.readyMs)} ms (seam: serving line after ${f1(report.startup.servingMs)} ms); ${report.hub.loopback}.`);
  if (report.hub.calls.errors.length) L.push(`First mcp-hub caller errors: ${report.hub.calls.errors.slice(0, 5).join(' | ')}`);
}
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
if (report.hub) {
  L.push(`| mcp-hub 4.2.1, the same ${MOUNTS} servers | after start, tools listed | ${mb(report.hub.startup.rssKb)} |`);
  L.push(`| mcp-hub 4.2.1, the same ${MOUNTS} servers | after (d) | ${mb(report.hub.rssKb)} |`);
}
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
