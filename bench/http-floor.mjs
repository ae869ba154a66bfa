// Where an MCP message over Streamable HTTP spends its time, client for client: node's fetch
// (keep-alive) against (1) a bare node HTTP server in this process, (2) seam's /healthz (axum,
// no MCP), (3) an MCP `ping` in a seam session (axum, the gate, rmcp's session worker and SSE
// stream, seam's JSON answer). (3) − (2) is what the MCP session path adds to every message.
//
//   node bench/http-floor.mjs --seam PATH --composition FILE [--runs N]
import http from 'node:http';
import path from 'node:path';

import { httpSession, serveHttp } from './minimal-mcp.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const RUNS = Number(args.runs || 1000);
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.setHeader('content-type', 'application/json'); res.end('{"jsonrpc":"2.0","id":1,"result":{}}'); });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const bare = `http://127.0.0.1:${server.address().port}/`;
const { child, url } = await serveHttp(args.seam, path.resolve(args.composition));
process.on('exit', () => child.kill('SIGTERM'));
const session = await httpSession(url, child);
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
const targets = [
  ['fetch → bare node HTTP server (POST)', async () => (await fetch(bare, { method: 'POST', body, headers: { 'content-type': 'application/json' } })).text()],
  ['fetch → seam /healthz (GET)', async () => (await fetch(url.replace(/\/mcp$/, '/healthz'))).text()],
  ['fetch → seam MCP ping in a session (POST)', async () => session.request('ping')],
];
const times = targets.map(() => []);
// In rounds, the order rotating, so the machine's drift falls on every target alike.
for (let i = 0; i < RUNS; i++) {
  for (let k = 0; k < targets.length; k++) {
    const j = (i + k) % targets.length;
    const t = process.hrtime.bigint();
    await targets[j][1]();
    times[j].push(Number(process.hrtime.bigint() - t) / 1e3);
  }
}
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
console.log('| target | p50 µs | p99 µs |\n| --- | ---: | ---: |');
targets.forEach(([name], j) => console.log(`| ${name} | ${pct(times[j], 50).toFixed(0)} | ${pct(times[j], 99).toFixed(0)} |`));
server.close();
process.exit(0);
