// Minimal MCP clients of the benchmarks' own, for measuring seam rather than a client library:
// JSON lines over stdio, and one fetch POST per message over Streamable HTTP. Each opens its session
// (`initialize`, `notifications/initialized`) and offers `request(method, params)`, resolving to the
// answer message, and `stop()`, which ends seam and waits for it.
import { spawn as spawnChild } from 'node:child_process';
import path from 'node:path';

const INITIALIZE = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } };

/// `seam serve COMPOSITION --transport http` on a free loopback port: the child and its default agent's URL.
export async function serveHttp(seam, composition, spawn = spawnChild) {
  const child = spawn(path.resolve(seam), ['serve', composition, '--transport', 'http', '--listen', '127.0.0.1:0', '--no-watch'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (c) => { err += c; const m = /serving agent `default` at (\S+)\n/.exec(err); if (m) resolve(m[1]); });
    child.on('exit', () => reject(new Error(err)));
  });
  return { child, url };
}

/// Ends `child` (SIGTERM, or closing its input) and waits for it.
async function ended(child, how) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  how();
  await exited;
}

/// A session over Streamable HTTP at `url`; `child` is the seam serving it, stopped by `stop()`.
export async function httpSession(url, child) {
  let session;
  let next = 1;
  const post = async (message) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': INITIALIZE.protocolVersion };
    if (session) headers['mcp-session-id'] = session;
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) });
    session ??= response.headers.get('mcp-session-id');
    const text = await response.text();
    if (message.id === undefined) return undefined;
    // JSON when seam answers at once; otherwise the answer is the SSE event that carries it.
    if (response.headers.get('content-type')?.startsWith('application/json')) return JSON.parse(text);
    return text.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((d) => d).map((d) => JSON.parse(d)).find((m) => m.id === message.id);
  };
  const request = (method, params) => post({ jsonrpc: '2.0', id: next++, method, params });
  await request('initialize', INITIALIZE);
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { request, stop: () => ended(child, () => child.kill('SIGTERM')) };
}

/// `seam serve COMPOSITION` over stdio, in `cwd`, with a session open on it.
export async function stdioSession(seam, composition, { cwd, spawn = spawnChild } = {}) {
  const child = spawn(path.resolve(seam), ['serve', composition, '--no-watch'], { cwd, stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting = new Map();
  let next = 1;
  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (m.id !== undefined && !m.method && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
    }
  });
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  const request = (method, params) => new Promise((resolve) => { const id = next++; waiting.set(id, resolve); send({ jsonrpc: '2.0', id, method, params }); });
  await request('initialize', INITIALIZE);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { request, stop: () => ended(child, () => child.stdin.end()) };
}
