// The same three requests over seam's two transports, in alternation, one seam each: an MCP
// `ping`, a call to an MCP mount's tool (`mcp__a__ping` of tests/peers/flaky-mcp-server.mjs), and an
// `lsp` goToDefinition. Minimal clients on both sides (fetch; JSON lines), 400 rounds; p50 per pair.
// (HTTP − stdio) of `lsp` minus that of the MCP tool is what HTTP costs the lsp tool alone.
//
//   node bench/transport-ab.mjs SEAM COMPOSITION
// COMPOSITION mounts `typescript` (lsp.stdio, workspace = target/bench-data/lsp/project, made by
// scripts/bench-lsp) and `a` (mcp.stdio, the flaky server); see BENCHMARKS.md Part 4.
import { spawn } from 'node:child_process';
const [seamBin, composition] = process.argv.slice(2);
const calls = {
  ping: { method: 'ping' },
  mcp: { method: 'tools/call', params: { name: 'mcp__a__ping', arguments: { message: 'x' } } },
  lsp: { method: 'tools/call', params: { name: 'lsp', arguments: { operation: 'goToDefinition', file_path: 'src/main.ts', line: 5, character: 13 } } },
};
async function http() {
  const seam = spawn(seamBin, ['serve', composition, '--transport', 'http', '--listen', '127.0.0.1:0', '--no-watch'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve) => { let err = ''; seam.stderr.on('data', (c) => { err += c; const m = /serving agent `default` at (\S+)\n/.exec(err); if (m) resolve(m[1]); }); });
  let session; let next = 1;
  const post = async (message) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
    if (session) headers['mcp-session-id'] = session;
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) });
    session ??= response.headers.get('mcp-session-id');
    return response.text();
  };
  await post({ jsonrpc: '2.0', id: next++, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } } });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { ask: (m) => post({ jsonrpc: '2.0', id: next++, ...m }), stop: () => seam.kill('SIGTERM') };
}
async function stdio() {
  const seam = spawn(seamBin, ['serve', composition, '--no-watch'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting = new Map(); let next = 1; let buf = '';
  seam.stdout.setEncoding('utf8');
  seam.stdout.on('data', (c) => { buf += c; for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) { const m = JSON.parse(buf.slice(0, nl)); buf = buf.slice(nl + 1); if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); } } });
  const req = (m) => new Promise((resolve) => { const id = next++; waiting.set(id, resolve); seam.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, ...m }) + '\n'); });
  await req({ method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } } });
  seam.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  return { ask: req, stop: () => seam.stdin.end() };
}
const sides = { http: await http(), stdio: await stdio() };
for (const s of Object.values(sides)) for (const c of Object.values(calls)) await s.ask(c);
const times = {};
for (let i = 0; i < 400; i++) for (const [sn, s] of Object.entries(sides)) for (const [cn, c] of Object.entries(calls)) {
  const t = process.hrtime.bigint(); await s.ask(c); (times[`${sn} ${cn}`] ??= []).push(Number(process.hrtime.bigint() - t) / 1e3);
}
for (const [k, xs] of Object.entries(times)) { xs.sort((a, b) => a - b); console.log(k.padEnd(12), 'p50', xs[xs.length >> 1].toFixed(0), 'µs'); }
for (const s of Object.values(sides)) s.stop();
process.exit(0);
