// Gateway overhead: one `tools/call` round trip to server-everything's `echo`
// ({message:"hi"}) through each gateway, side by side, in ONE run.
//
//   node bench/gateway.mjs --seam PATH --out DIR [--quick] [--only a,b,...] [--relay BIN] [--nodelay-shim SO] [--echo-server BIN] [--interleave]
//
// For each target: warm up, then BENCH_CALLS calls sequentially with 1 client,
// then BENCH_CALLS calls in total spread over BENCH_CLIENTS (16) concurrent
// client connections, each calling sequentially. Prints a Markdown table
// (p50/p99 in µs, calls/s, RSS of the gateway process only) and writes
// DIR/gateway.json. Started by scripts/bench-gateway, which installs the peers.
//
// Environment: BENCH_CALLS (default 2000; --quick 300), BENCH_WARMUP (default
// 500: the Node servers need that many to reach steady state; --quick 50), BENCH_CLIENTS (default 16).
//
// Every process this starts listens on 127.0.0.1 only; mcp-hub runs with HOME
// and XDG_* pointing into DIR, where a fresh marketplace cache is placed first,
// under `strace -f -e trace=connect` (seccomp-filtered: only connect() stops),
// and the run fails if it (or any child) connects anywhere but loopback or a
// Unix socket. The fastmcp proxy runs with FASTMCP_CHECK_FOR_UPDATES=off.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const sdk = new URL('../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdk));
const { StdioClientTransport } = await import(new URL('client/stdio.js', sdk));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdk));
const { SSEClientTransport } = await import(new URL('client/sse.js', sdk));
const { mcpHubHome, mcpHubCommand, mcpHubReady, checkLoopbackOnly } = await import('./mcp-hub.mjs');

// --- Arguments ----------------------------------------------------------------
// undici's fetch adds one abort listener per request to the SDK transport's shared
// AbortSignal and drops it only when the request is garbage-collected, so a long
// run trips Node's MaxListenersExceededWarning now and then: client-side noise.
process.removeAllListeners('warning');
process.on('warning', (w) => { if (w.name !== 'MaxListenersExceededWarning') console.error(w); });

const argv = process.argv.slice(2);
const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const QUICK = argv.includes('--quick');
const SEAM = path.resolve(opt('--seam') ?? path.join(root, 'target/bench-build/release/seam'));
const OUT = path.resolve(opt('--out') ?? path.join(root, 'target/bench-data/gateway'));
const ONLY = opt('--only')?.split(',');
const NODELAY_SHIM = opt('--nodelay-shim') && path.resolve(opt('--nodelay-shim'));
const CALLS = Number(process.env.BENCH_CALLS ?? (QUICK ? 300 : 2000));
const WARMUP = Number(process.env.BENCH_WARMUP ?? (QUICK ? 50 : 500));
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);

const EVERYTHING = path.join(root, '.cache/peers/node_modules/.bin/mcp-server-everything');
const SUPERGATEWAY = path.join(root, '.cache/bench/npm/node_modules/.bin/supergateway');
const PYTHON = path.join(root, '.cache/bench/venv/bin/python');
const FASTMCP_PROXY = path.join(here, 'fastmcp_proxy.py');
const RELAY = opt('--relay') && path.resolve(opt('--relay'));
// examples/echo_server.rs built in release: the fast upstream of the added-latency targets.
const ECHO_SERVER = opt('--echo-server') && path.resolve(opt('--echo-server'));

fs.mkdirSync(OUT, { recursive: true });
const log = (...a) => console.error('[gateway]', ...a);

// --- Helpers ------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function rssKb(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
    return m ? Number(m[1]) : null;
  } catch { return null; }
}

// CPU time (user + system) of one process so far, in ms; null when it cannot be read.
const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
function cpuMs(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch { return null; }
}

function childrenOf(pid) {
  const kids = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) kids.push(Number(d));
    } catch { /* gone */ }
  }
  return kids;
}

// The process that actually serves: strace and `env` shebangs exec through, but
// under strace the traced program is strace's child.
function servingPid(pid, viaStrace) {
  if (!viaStrace) return pid;
  const kids = childrenOf(pid);
  return kids.length ? kids[0] : pid;
}

function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const started = []; // { child, name } of every process group this script started

function start(name, command, args, { env = {}, cwd = OUT } = {}) {
  const errPath = path.join(OUT, `${name}.stderr.log`);
  const errFd = fs.openSync(errPath, 'w');
  const child = spawn(command, args, {
    cwd, env: { ...process.env, ...env }, stdio: ['ignore', errFd, 'pipe'], detached: true,
  });
  fs.closeSync(errFd);
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; fs.appendFileSync(errPath, d); });
  child.exited = new Promise((r) => child.once('exit', (code, sig) => r({ code, sig })));
  started.push({ child, name });
  return { child, stderrText: () => stderr, errPath };
}

async function stopGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try { process.kill(-child.pid, 'SIGTERM'); } catch { return; }
  const t = await Promise.race([child.exited, sleep(3000).then(() => 'timeout')]);
  if (t === 'timeout') { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } await child.exited; }
}

async function until(what, fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try { const v = await fn(); if (v) return v; } catch (e) { last = e; }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

function tcpOpen(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function connectClient(makeTransport, label) {
  const client = new Client({ name: `seam-bench-${label}`, version: '0.1.0' });
  const transport = makeTransport();
  client.onerror = () => {};
  await client.connect(transport);
  return { client, transport };
}

// --- Targets ------------------------------------------------------------------
// Each: { name, transport, setup() -> { connect(i) -> {client, transport}, pid(conns) , stop() , note } , tool }

function writeSeamComposition() {
  const file = path.join(OUT, 'gateway.yaml');
  fs.writeFileSync(file, [
    'seam: 1',
    'name: bench-gateway',
    'mounts:',
    '  ev:',
    '    kind: mcp.stdio',
    `    command: ${JSON.stringify(EVERYTHING)}`,
    '    args: [stdio]',
    '',
  ].join('\n'));
  return file;
}

const stdioTransport = (command, args, errName) => () => {
  const t = new StdioClientTransport({ command, args, env: process.env, stderr: 'pipe', cwd: OUT });
  const errPath = path.join(OUT, `${errName}.stderr.log`);
  t.stderr?.on('data', (d) => fs.appendFileSync(errPath, d));
  return t;
};

async function startEchoServer(name) {
  const p = start(name, ECHO_SERVER, []);
  const url = await until(`${name}: listening line`, () => {
    if (p.child.exitCode !== null) throw new Error(`${name} exited: ${p.stderrText()}`);
    const m = p.stderrText().match(/listening at (http:\/\/\S+)/);
    return m && new URL(m[1]);
  });
  return { child: p.child, url };
}

// `seam serve FILE` over HTTP on a free port, started as `name` (with `env` added): the
// process and the URL its serving line gives.
async function seamOverHttp(name, file, env = {}, flags = []) {
  const p = start(name, SEAM, ['serve', file, '--transport', 'http', '--listen', '127.0.0.1:0', ...flags], { env });
  const url = await until('seam serving line', () => {
    const m = p.stderrText().match(/serving agent `[^`]*` at (http:\/\/\S+\/mcp)/);
    if (p.child.exitCode !== null) throw new Error(`seam exited: ${p.stderrText()}`);
    return m && new URL(m[1]);
  });
  return { child: p.child, url };
}

// A target's setup for seam over HTTP: its pid, its client transport, and its stop.
const seamTarget = (seam) => ({ pid: seam.child.pid, makeTransport: () => new StreamableHTTPClientTransport(seam.url), stop: () => stopGroup(seam.child) });

// seam over HTTP in front of a fresh rmcp echo server, mounted as `echo` with `lines` added
// to the mount; with `lock`, the lock is written first (`seam lock FILE`, the release binary);
// `flags` go to `seam serve`.
async function seamOverEcho(name, composition, lines = [], { lock = false, env = {}, flags = [] } = {}) {
  const echo = await startEchoServer(`${name}-upstream`);
  const file = path.join(OUT, `${composition}.yaml`);
  fs.writeFileSync(file, ['seam: 1', `name: bench-${composition}`, 'mounts:', '  echo:', '    kind: mcp.http', `    url: ${echo.url}`, ...lines, ''].join('\n'));
  if (lock) {
    fs.rmSync(path.join(OUT, `${composition}.lock.json`), { force: true });
    const errFd = fs.openSync(path.join(OUT, `${name}-lock.stderr.log`), 'w');
    try { execFileSync(SEAM, ['lock', file], { cwd: OUT, stdio: ['ignore', 'ignore', errFd] }); } finally { fs.closeSync(errFd); }
  }
  const seam = seamTarget(await seamOverHttp(name, file, env, flags));
  return { ...seam, stop: async () => { await seam.stop(); await stopGroup(echo.child); } };
}

const TARGETS = [
  {
    name: 'direct (server-everything)', key: 'direct', transport: 'stdio', tool: 'echo', stdio: true,
    async setup() {
      fs.writeFileSync(path.join(OUT, 'direct.stderr.log'), '');
      return { makeTransport: stdioTransport(EVERYTHING, ['stdio'], 'direct'), stop: async () => {} };
    },
  },
  {
    // Diagnostic: bench/relay.c copies bytes between the client and server-everything
    // with one poll() loop: the cost of any stdio hop on this machine. Only with --relay PATH.
    name: 'relay floor (C poll loop, diagnostic)', key: 'relay', transport: 'stdio', tool: 'echo', stdio: true, optional: true,
    async setup() {
      fs.writeFileSync(path.join(OUT, 'relay.stderr.log'), '');
      return { makeTransport: stdioTransport(RELAY, [EVERYTHING, 'stdio'], 'relay'), stop: async () => {} };
    },
  },
  {
    name: 'server-everything HTTP', key: 'everything-http', transport: 'streamable HTTP', tool: 'echo',
    async setup() {
      const port = await freePort();
      const p = start('everything-http', EVERYTHING, ['streamableHttp'], { env: { PORT: String(port) } });
      await until('server-everything streamableHttp', () => tcpOpen(port));
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      return { pid: p.child.pid, makeTransport: () => new StreamableHTTPClientTransport(url), stop: () => stopGroup(p.child) };
    },
  },
  {
    // The added-latency pair (scripts/bench-added-latency): an rmcp echo server over
    // Streamable HTTP called directly, and through seam serve over HTTP. Only with --echo-server PATH.
    name: 'rmcp echo server (direct)', key: 'echo-direct', transport: 'streamable HTTP', tool: 'echo', optional: true,
    async setup() {
      const { child, url } = await startEchoServer('echo-direct');
      return { pid: child.pid, makeTransport: () => new StreamableHTTPClientTransport(url), stop: () => stopGroup(child) };
    },
  },
  {
    name: 'seam → rmcp echo server', key: 'seam-http-echo', transport: 'streamable HTTP', tool: 'mcp__echo__echo', optional: true,
    setup: () => seamOverEcho('seam-http-echo', 'added-latency'),
  },
  {
    // The same, the mount pinned to its lock and its tool rewritten: renamed, and `message`
    // given a default the client leaves to seam (it sends no arguments; "Echo: hi" proves the fill).
    name: 'seam → rmcp echo server, pinned + rewritten', key: 'seam-http-echo-pinned', transport: 'streamable HTTP', tool: 'mcp__echo__say', args: {},
    optional: true,
    setup: () => seamOverEcho('seam-http-echo-pinned', 'added-latency-pinned', [
      '    pin: locked', '    rewrite:', '      echo:', '        name: say', '        arguments: { defaults: { message: hi } }',
    ], { lock: true }),
  },
  {
    // The same with the call stage's controls on (issue 40): a quota rule over the tool (a
    // bucket and a count of calls at once, never reached) and the audit trail, HMAC-sealed.
    name: 'seam → rmcp echo server, quota + audit', key: 'seam-http-echo-governed', transport: 'streamable HTTP', tool: 'mcp__echo__echo',
    optional: true,
    setup: () => {
      fs.rmSync(path.join(OUT, 'audit'), { recursive: true, force: true });
      return seamOverEcho('seam-http-echo-governed', 'added-latency-governed', [
        'quota:', '  - { tools: "mcp__echo__*", calls: { max: 1000000000, per: 1s }, concurrent: 100000 }',
        'serve:', `  audit: { path: ${JSON.stringify(path.join(OUT, 'audit', 'trail.jsonl'))}, key_env: SEAM_BENCH_AUDIT_KEY }`,
      ], { env: { SEAM_BENCH_AUDIT_KEY: 'bench-audit-key' } });
    },
  },
  {
    // The plain pair with nothing measured for /metrics (issue 41): what metrics cost a call.
    name: 'seam → rmcp echo server, --no-metrics', key: 'seam-http-echo-unmeasured', transport: 'streamable HTTP', tool: 'mcp__echo__echo',
    optional: true,
    setup: () => seamOverEcho('seam-http-echo-unmeasured', 'added-latency-unmeasured', [], { flags: ['--no-metrics'] }),
  },
  {
    name: 'seam', key: 'seam-stdio', transport: 'stdio', tool: 'mcp__ev__echo', stdio: true,
    async setup() {
      const file = writeSeamComposition();
      fs.writeFileSync(path.join(OUT, 'seam-stdio.stderr.log'), '');
      return { makeTransport: stdioTransport(SEAM, ['serve', file], 'seam-stdio'), stop: async () => {} };
    },
  },
  {
    name: 'seam', key: 'seam-http', transport: 'streamable HTTP', tool: 'mcp__ev__echo',
    async setup() {
      return seamTarget(await seamOverHttp('seam-http', writeSeamComposition()));
    },
  },
  {
    // Diagnostic: the same seam binary, with an LD_PRELOAD shim (bench/nodelay-shim.c)
    // setting TCP_NODELAY on accepted sockets. Only with --nodelay-shim PATH.
    name: 'seam + TCP_NODELAY shim (diagnostic)', key: 'seam-http-nodelay', transport: 'streamable HTTP', tool: 'mcp__ev__echo',
    optional: true,
    async setup() {
      return seamTarget(await seamOverHttp('seam-http-nodelay', writeSeamComposition(), { LD_PRELOAD: NODELAY_SHIM }));
    },
  },
  {
    name: 'supergateway 4.0.0 --stateful', key: 'supergateway', transport: 'streamable HTTP', tool: 'echo',
    async setup() {
      const port = await freePort();
      const p = start('supergateway', SUPERGATEWAY, [
        '--stdio', `${EVERYTHING} stdio`, '--outputTransport', 'streamableHttp', '--stateful',
        '--port', String(port), '--logLevel', 'none',
      ]);
      await until('supergateway', () => tcpOpen(port));
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      return { pid: p.child.pid, makeTransport: () => new StreamableHTTPClientTransport(url), stop: () => stopGroup(p.child) };
    },
  },
  {
    name: 'mcp-hub 4.2.1', key: 'mcp-hub', transport: 'SSE (old)', tool: 'ev__echo',
    async setup() {
      const env = mcpHubHome(path.join(OUT, 'mcp-hub-home'));
      const config = path.join(OUT, 'mcp-hub.json');
      fs.writeFileSync(config, JSON.stringify({ mcpServers: { ev: { command: EVERYTHING, args: ['stdio'] } } }, null, 2));
      const port = await freePort();
      const straceLog = path.join(OUT, 'mcp-hub.strace');
      const p = start('mcp-hub', ...mcpHubCommand({ port, config, straceLog }), { env, cwd: env.HOME });
      await until('mcp-hub ready with ev connected', () => mcpHubReady(port, ['ev']), 60000);
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      return {
        pid: () => servingPid(p.child.pid, true),
        makeTransport: () => new SSEClientTransport(url),
        stop: () => stopGroup(p.child),
        check: () => checkLoopbackOnly(straceLog),
      };
    },
  },
  {
    name: 'fastmcp 4.2.3 proxy', key: 'fastmcp', transport: 'streamable HTTP', tool: 'echo',
    async setup() {
      const port = await freePort();
      const straceLog = path.join(OUT, 'fastmcp.strace');
      const p = start('fastmcp', 'strace', [
        '-f', '--seccomp-bpf', '-e', 'trace=connect', '-o', straceLog,
        PYTHON, FASTMCP_PROXY, String(port), EVERYTHING, 'stdio',
      ], { env: { FASTMCP_CHECK_FOR_UPDATES: 'off', FASTMCP_SHOW_SERVER_BANNER: 'false' } });
      await until('fastmcp proxy', () => tcpOpen(port));
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      return {
        pid: () => servingPid(p.child.pid, true),
        makeTransport: () => new StreamableHTTPClientTransport(url),
        stop: () => stopGroup(p.child),
        check: () => checkLoopbackOnly(straceLog),
      };
    },
  },
];

// Fails on any connect() to an inet address outside 127.0.0.0/8 and ::1.
// --- Measurement --------------------------------------------------------------
const ARGS = { message: 'hi' };

async function callOnce(client, tool, args = ARGS) {
  const t0 = process.hrtime.bigint();
  const r = await client.callTool({ name: tool, arguments: args });
  const us = Number(process.hrtime.bigint() - t0) / 1000;
  const text = r?.content?.[0]?.text;
  if (r?.isError || text !== 'Echo: hi') throw new Error(`unexpected result: ${JSON.stringify(r).slice(0, 200)}`);
  return us;
}

async function loop(client, tool, n, lat, errors, args) {
  for (let i = 0; i < n; i++) {
    try { lat.push(await callOnce(client, tool, args)); } catch (e) { errors.push(e.message); }
  }
}

function summary(lat, wallMs, errors) {
  const s = Float64Array.from(lat).sort();
  return {
    n: lat.length, errors: errors.length, firstErrors: [...new Set(errors)].slice(0, 3),
    p50: percentile(s, 0.5), p99: percentile(s, 0.99), mean: lat.reduce((a, b) => a + b, 0) / (lat.length || 1),
    callsPerSec: (lat.length / wallMs) * 1000,
  };
}

async function runTarget(t) {
  const res = { key: t.key, name: t.name, transport: t.transport };
  const env = await t.setup();
  const pidOf = (conn) => (typeof env.pid === 'function' ? env.pid() : env.pid ?? conn.transport.pid);
  const conns = [];
  try {
    // 1 client.
    const first = await until(`${t.key}: first client`, () => connectClient(env.makeTransport, t.key), 60000);
    conns.push(first);
    const tools = await first.client.listTools();
    if (!tools.tools.some((x) => x.name === t.tool)) throw new Error(`${t.key}: no tool ${t.tool} in ${tools.tools.map((x) => x.name).join(',')}`);
    await loop(first.client, t.tool, WARMUP, [], [], t.args);
    {
      const lat = []; const errors = [];
      const cpu0 = cpuMs(pidOf(first));
      const t0 = performance.now();
      await loop(first.client, t.tool, CALLS, lat, errors, t.args);
      res.one = summary(lat, performance.now() - t0, errors);
      const cpu1 = cpuMs(pidOf(first));
      res.cpuUsPerCall = cpu0 === null || cpu1 === null ? null : ((cpu1 - cpu0) * 1000) / CALLS;
    }
    res.rssAfterOneKb = rssKb(pidOf(first));

    // CLIENTS clients (for stdio targets, each spawns its own server process).
    const many = [first];
    for (let i = 1; i < CLIENTS; i++) {
      const c = await connectClient(env.makeTransport, `${t.key}-${i}`);
      conns.push(c);
      many.push(c);
    }
    const per = Math.floor(CALLS / CLIENTS);
    const extra = CALLS - per * CLIENTS;
    await Promise.all(many.map((c) => loop(c.client, t.tool, Math.max(5, Math.ceil(WARMUP / CLIENTS)), [], [], t.args)));
    {
      const lat = []; const errors = [];
      const t0 = performance.now();
      await Promise.all(many.map((c, i) => loop(c.client, t.tool, per + (i < extra ? 1 : 0), lat, errors, t.args)));
      res.many = summary(lat, performance.now() - t0, errors);
    }
    const gwPid = pidOf(first);
    res.rssKb = rssKb(gwPid);
    res.children = childrenOf(gwPid).length;
    if (t.stdio) {
      const all = many.map((c) => rssKb(c.transport.pid)).filter((x) => x !== null);
      res.rssEachMeanKb = all.reduce((a, b) => a + b, 0) / (all.length || 1);
      res.processes = all.length;
    }
    res.check = env.check?.();
  } finally {
    await Promise.all(conns.map((c) => c.client.close().catch(() => {})));
    await env.stop();
  }
  return res;
}

// An optional target runs only when what it needs was given.
function available(t) {
  if (!t.optional) return true;
  if (t.key === 'relay') return Boolean(RELAY);
  if (t.key === 'seam-http-nodelay') return Boolean(NODELAY_SHIM);
  return Boolean(ECHO_SERVER); // echo-direct and every seam-http-echo target
}

// --- Interleaved: one client per target, calls alternating ----------------------
// With --interleave, the targets chosen (--only) each get one client, warmed up, and then
// BENCH_CALLS rounds of one call per target (the order rotating each round): drift of this
// 2-core VM between minutes falls on every target alike, which comparing p50s measured one
// target after another cannot promise. Prints p50/p99 per target and each one's p50 minus
// the first target's, and its calls/s (10⁶ ÷ its mean latency in µs: one sequential client's rate).
if (argv.includes('--interleave')) {
  // In --only's order, so that `--pair FIRST,SECOND` compares SECOND against FIRST as it says.
  const chosen = TARGETS.filter((t) => (!ONLY || ONLY.includes(t.key)) && available(t))
    .sort((a, b) => (ONLY ? ONLY.indexOf(a.key) - ONLY.indexOf(b.key) : 0));
  const live = [];
  for (const t of chosen) {
    const env = await t.setup();
    const conn = await until(`${t.key}: client`, () => connectClient(env.makeTransport, t.key), 60000);
    await loop(conn.client, t.tool, WARMUP, [], [], t.args);
    live.push({ t, env, conn, lat: [], errors: [] });
  }
  const cpuBefore = live.map((x) => (x.env.pid ? cpuMs(x.env.pid) : null));
  for (let i = 0; i < CALLS; i++) {
    for (let k = 0; k < live.length; k++) {
      const x = live[(i + k) % live.length];
      try { x.lat.push(await callOnce(x.conn.client, x.t.tool, x.t.args)); } catch (e) { x.errors.push(e.message); }
    }
  }
  const cpuUsPerCall = live.map((x, i) => (cpuBefore[i] == null ? null : ((cpuMs(x.env.pid) - cpuBefore[i]) * 1000) / CALLS));
  for (const x of live) { await x.conn.client.close().catch(() => {}); await x.env.stop(); }
  for (const { child } of started) await stopGroup(child);
  const p50s = live.map((x) => percentile(Float64Array.from(x.lat).sort(), 0.5));
  const rates = live.map((x) => 1e6 / (x.lat.reduce((a, b) => a + b, 0) / (x.lat.length || 1)));
  const out = [`Interleaved: ${CALLS} rounds of one echo call per target after ${WARMUP} warm-up calls each, 1 client per target.`, '',
    '| target | transport | p50 µs | p99 µs | p50 − first row µs | calls/s | CPU µs per call | errors |', '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |'];
  live.forEach((x, i) => out.push(`| ${x.t.name} | ${x.t.transport} | ${p50s[i].toFixed(0)} | ${percentile(Float64Array.from(x.lat).sort(), 0.99).toFixed(0)} | ${i === 0 ? '–' : (p50s[i] - p50s[0]).toFixed(0)} | ${rates[i].toFixed(0)} | ${cpuUsPerCall[i] == null ? '–' : cpuUsPerCall[i].toFixed(0)} | ${x.errors.length} |`));
  console.log(out.join('\n'));
  fs.writeFileSync(path.join(OUT, 'interleaved.md'), out.join('\n') + '\n');
  const perTarget = live.map((x, i) => ({ key: x.t.key, p50: p50s[i], p99: percentile(Float64Array.from(x.lat).sort(), 0.99), callsPerSec: rates[i], cpuUsPerCall: cpuUsPerCall[i], errors: x.errors.length }));
  fs.writeFileSync(path.join(OUT, 'interleaved.json'), JSON.stringify({ calls: CALLS, warmup: WARMUP, targets: perTarget }, null, 2));
  process.exit(live.some((x) => x.errors.length) ? 1 : 0);
}

// --- Main -----------------------------------------------------------------------
const results = [];
const failures = [];
for (const t of TARGETS) {
  if (ONLY && !ONLY.includes(t.key)) continue;
  if (!available(t)) continue;
  log(`${t.key}: ${CALLS} calls after ${WARMUP} warm-up, 1 client then ${CLIENTS} clients`);
  try {
    const r = await runTarget(t);
    results.push(r);
    log(`${t.key}: p50 ${r.one.p50.toFixed(0)} µs (1), ${r.many.p50.toFixed(0)} µs (${CLIENTS}); errors ${r.one.errors}+${r.many.errors}${r.check ? `; ${r.check}` : ''}`);
  } catch (e) {
    log(`${t.key}: FAILED: ${e.stack ?? e}`);
    failures.push({ key: t.key, name: t.name, error: String(e.message ?? e) });
  }
}
for (const { child } of started) await stopGroup(child);

const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '–');
const mb = (kb) => (kb == null ? '–' : (kb / 1024).toFixed(1));
const lines = [];
lines.push(`Echo round trip (\`tools/call\` echo {message:"hi"}), ${CALLS} calls per column after ${WARMUP} warm-up calls; ${CLIENTS} clients = ${CLIENTS} separate connections calling sequentially, ${CALLS} calls in total.`);
lines.push('');
lines.push(`| target | transport | p50 µs (1 client) | p99 µs (1) | calls/s (1) | p50 µs (${CLIENTS}) | p99 µs (${CLIENTS}) | calls/s (${CLIENTS}) | RSS MB |`);
lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of results) {
  const stdioMark = r.processes ? ` ¹` : '';
  lines.push(`| ${r.name} | ${r.transport}${stdioMark} | ${f0(r.one.p50)} | ${f0(r.one.p99)} | ${f0(r.one.callsPerSec)} | ${f0(r.many.p50)} | ${f0(r.many.p99)} | ${f0(r.many.callsPerSec)} | ${mb(r.rssKb)} |`);
}
for (const f of failures) lines.push(`| ${f.name} | FAILED: ${f.error.split('\n')[0]} | | | | | | | |`);
lines.push('');
lines.push(`¹ stdio targets: the ${CLIENTS}-client column runs ${CLIENTS} separate server processes (one per client connection: ${CLIENTS} server-everything processes for direct, ${CLIENTS} seam processes each with its own server-everything child for seam).`);
lines.push('');
if (results.some((r) => r.key === 'seam-http-nodelay')) {
  lines.push('The "TCP_NODELAY shim" row is a diagnostic, not a configuration of seam: the same binary with an LD_PRELOAD shim (bench/nodelay-shim.c) that sets TCP_NODELAY on each accepted socket.');
  lines.push('');
}
lines.push('RSS: VmRSS of the gateway process only (children excluded), read after the run: for HTTP targets the one server process after both phases (16 sessions open); for stdio targets the process that served the 1-client phase, read at the end of the 16-client phase.');
lines.push('');
lines.push('CPU: user + system time of that process during the 1-client phase, per call (for direct, the server\'s own; ±10 ms of clock ticks over the phase).');
lines.push('');
lines.push('| target | transport | CPU µs per call (1 client) | RSS MB after 1-client phase | RSS MB at end | child processes at end | mean RSS MB of the 16 stdio processes | errors (1 / 16) | note |');
lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |');
for (const r of results) {
  const err = `${r.one.errors} / ${r.many.errors}${r.one.firstErrors.concat(r.many.firstErrors).length ? ` (${[...new Set(r.one.firstErrors.concat(r.many.firstErrors))].join('; ')})` : ''}`;
  lines.push(`| ${r.name} | ${r.transport} | ${f0(r.cpuUsPerCall)} | ${mb(r.rssAfterOneKb)} | ${mb(r.rssKb)} | ${r.children ?? '–'} | ${r.processes ? mb(r.rssEachMeanKb) : '–'} | ${err} | ${r.check ?? ''} |`);
}
const table = lines.join('\n');
console.log(table);
fs.writeFileSync(path.join(OUT, 'gateway.json'), JSON.stringify({ calls: CALLS, warmup: WARMUP, clients: CLIENTS, results, failures }, null, 2));
fs.writeFileSync(path.join(OUT, 'gateway.md'), table + '\n');
log(`wrote ${path.join(OUT, 'gateway.json')} and gateway.md`);
process.exit(failures.length || results.some((r) => r.one.errors || r.many.errors) ? 1 : 0);
