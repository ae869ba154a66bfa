// The same three requests over seam's two transports, in alternation, one seam each: an MCP
// `ping`, a call to an MCP mount's tool (`mcp__a__ping` of tests/peers/flaky-mcp-server.mjs), and an
// `lsp` goToDefinition. Minimal clients on both sides (fetch; JSON lines), 400 rounds; p50 per pair.
// (HTTP − stdio) of `lsp` minus that of the MCP tool is what HTTP costs the lsp tool alone.
//
//   node bench/transport-ab.mjs SEAM
// The composition (written to target/bench-data/lsp/transport-ab.yaml) mounts typescript-language-server
// on the project `scripts/bench-lsp` makes (run it first) and the flaky server as mount `a`.
import fs from 'node:fs';
import path from 'node:path';

import { httpSession, serveHttp, stdioSession } from './minimal-mcp.mjs';

const seamBin = process.argv[2];
const data = path.resolve('target/bench-data/lsp');
const composition = path.join(data, 'transport-ab.yaml');
fs.writeFileSync(
  composition,
  `seam: 1
services:
  workspace: { root: ${JSON.stringify(path.join(data, 'project'))} }
mounts:
  typescript:
    kind: lsp.stdio
    command: ${JSON.stringify(path.resolve('.cache/peers/node_modules/.bin/typescript-language-server'))}
    args: [--stdio]
    extensions: { .ts: typescript }
    initialization_options: { tsserver: { useSyntaxServer: never } }
  a:
    kind: mcp.stdio
    command: node
    args: [${JSON.stringify(path.resolve('tests/peers/flaky-mcp-server.mjs'))}]
tools:
  lsp: true
`,
);
const calls = {
  ping: { method: 'ping' },
  mcp: { method: 'tools/call', params: { name: 'mcp__a__ping', arguments: { message: 'x' } } },
  lsp: { method: 'tools/call', params: { name: 'lsp', arguments: { operation: 'goToDefinition', file_path: 'src/main.ts', line: 5, character: 13 } } },
};
async function http() {
  const { child, url } = await serveHttp(seamBin, composition);
  return httpSession(url, child);
}
const sides = { http: await http(), stdio: await stdioSession(seamBin, composition) };
for (const s of Object.values(sides)) for (const c of Object.values(calls)) await s.request(c.method, c.params);
const times = {};
for (let i = 0; i < 400; i++) for (const [sn, s] of Object.entries(sides)) for (const [cn, c] of Object.entries(calls)) {
  const t = process.hrtime.bigint(); await s.request(c.method, c.params); (times[`${sn} ${cn}`] ??= []).push(Number(process.hrtime.bigint() - t) / 1e3);
}
for (const [k, xs] of Object.entries(times)) { xs.sort((a, b) => a - b); console.log(k.padEnd(12), 'p50', xs[xs.length >> 1].toFixed(0), 'µs'); }
for (const s of Object.values(sides)) await s.stop();
process.exit(0);
