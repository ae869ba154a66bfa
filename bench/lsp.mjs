// The lsp benchmark: the same goToDefinition question (a function used across
// files of a small TypeScript project) asked of typescript-language-server
//   (a) by a minimal direct LSP client of our own (this file): didOpen → definition → didClose, as seam does
//       (didOpen and the question in one write, didClose after the answer);
//   (b) through `seam serve --transport http` with the official MCP SDK client calling the `lsp` tool;
//   (c) the same through `seam serve` over stdio (the SDK client spawning seam, as an agent host does);
//   (d) the same over stdio by a minimal MCP client of our own (JSON lines, no schema validation): the
//       counterpart of (a), so that the ratio (d)/(a) is seam's own overhead and (c) − (d) the SDK client's;
//   (e) the same over Streamable HTTP by a minimal client of our own (fetch, one POST per message).
// Cold: from starting the server (or seam) to the first answer, one path at a time. Warm: p50/p99 of
// RUNS more answers per path, asked in rounds of one question per path (the order rotating each
// round), so that every path sees the same machine: this 2-core VM drifts by tens of percent
// between minutes, which a path-after-path run would put into the ratio.
//
//   node bench/lsp.mjs --seam PATH --out DIR [--runs N] [--only a,b,c,d,e]
import { spawn as spawnChild } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { httpSession, serveHttp, stdioSession } from './minimal-mcp.mjs';

// Every process this benchmark starts ends with it, however it ends (a crash would otherwise leave a seam serving).
const children = [];
const spawn = (...a) => { const child = spawnChild(...a); children.push(child); return child; };
process.on('exit', () => { for (const child of children) if (child.exitCode === null) child.kill('SIGTERM'); });

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const RUNS = Number(args.runs || 300);
const out = path.resolve(args.out);
const bin = path.resolve('.cache/peers/node_modules/.bin');
const sdk = new URL('../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdk));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdk));
const { StdioClientTransport } = await import(new URL('client/stdio.js', sdk));

// The project (the same as tests/lsp.rs).
const project = path.join(out, 'project');
const files = {
  'tsconfig.json': '{ "compilerOptions": { "strict": true, "target": "es2022", "module": "nodenext" }, "include": ["src"] }',
  'src/greet.ts': 'export interface Greeter {\n  greet(name: string): string;\n}\n\nexport function shout(text: string): string {\n  return text.toUpperCase();\n}\n',
  'src/english.ts': 'import { Greeter, shout } from "./greet.js";\n\nexport class English implements Greeter {\n  greet(name: string): string {\n    return shout(`hello ${name}`);\n  }\n}\n',
  'src/main.ts': 'import { shout } from "./greet.js";\nimport { English } from "./english.js";\n\nconst g: import("./greet.js").Greeter = new English();\nconsole.log(shout(g.greet("😀 日本")), VERSION);\n',
  'src/globals.d.ts': 'declare const VERSION: string;\n',
};
for (const [name, text] of Object.entries(files)) {
  fs.mkdirSync(path.dirname(path.join(project, name)), { recursive: true });
  fs.writeFileSync(path.join(project, name), text);
}
const main = path.join(project, 'src/main.ts');
const expected = 'src/greet.ts:5:17';

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
const ms = (ns) => Number(ns) / 1e6;

async function direct() {
  const started = process.hrtime.bigint();
  const child = spawn(path.join(bin, 'typescript-language-server'), ['--stdio'], { cwd: project, stdio: ['pipe', 'pipe', 'ignore'] });
  let buf = Buffer.alloc(0);
  const waiting = new Map();
  let next = 1;
  child.stdout.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, end).toString())[1]);
      if (buf.length < end + 4 + len) return;
      const m = JSON.parse(buf.subarray(end + 4, end + 4 + len).toString());
      buf = buf.subarray(end + 4 + len);
      if (m.id !== undefined && m.method) write({ jsonrpc: '2.0', id: m.id, result: m.method === 'workspace/configuration' ? m.params.items.map(() => null) : null });
      else if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
    }
  });
  // Header and body in one write, and a question written with the notifications before it (as seam does).
  const frame = (m) => { const b = JSON.stringify(m); return `Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`; };
  const write = (m) => child.stdin.write(frame(m));
  const request = (method, params, before = '') => new Promise((resolve) => { const id = next++; waiting.set(id, resolve); child.stdin.write(before + frame({ jsonrpc: '2.0', id, method, params })); });
  const uri = `file://${project}`;
  await request('initialize', { processId: process.pid, rootUri: uri, workspaceFolders: [{ uri, name: 'project' }], initializationOptions: { tsserver: { useSyntaxServer: 'never' } }, capabilities: { general: { positionEncodings: ['utf-16'] }, workspace: { configuration: true } } });
  write({ jsonrpc: '2.0', method: 'initialized', params: {} });
  const ask = async () => {
    const text = fs.readFileSync(main, 'utf8');
    const doc = `file://${main}`;
    const open = frame({ jsonrpc: '2.0', method: 'textDocument/didOpen', params: { textDocument: { uri: doc, languageId: 'typescript', version: 1, text } } });
    const answer = await request('textDocument/definition', { textDocument: { uri: doc }, position: { line: 4, character: 12 } }, open);
    write({ jsonrpc: '2.0', method: 'textDocument/didClose', params: { textDocument: { uri: doc } } });
    const target = [].concat(answer.result)[0];
    const where = `${path.relative(project, new URL(target.uri ?? target.targetUri).pathname)}:${(target.range ?? target.targetSelectionRange).start.line + 1}:${(target.range ?? target.targetSelectionRange).start.character + 1}`;
    if (where !== expected) throw new Error(`direct: ${where}`);
  };
  await ask();
  const cold = ms(process.hrtime.bigint() - started);
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill();
    await exited;
  };
  return { cold, ask, stop };
}

function writeComposition() {
  const composition = path.join(project, 'seam.yaml');
  fs.writeFileSync(composition, `seam: 1\nservices:\n  workspace: { root: . }\nmounts:\n  typescript:\n    kind: lsp.stdio\n    command: ${JSON.stringify(path.join(bin, 'typescript-language-server'))}\n    args: [--stdio]\n    extensions: { .ts: typescript }\n    initialization_options: { tsserver: { useSyntaxServer: never } }\ntools:\n  lsp: true\n`);
  return composition;
}

// The cold first answer through a connected MCP client, and how to ask again.
async function askThrough(client, started) {
  const ask = async () => {
    const r = await client.callTool({ name: 'lsp', arguments: { operation: 'goToDefinition', file_path: 'src/main.ts', line: 5, character: 13 } });
    if (!r.content[0].text.startsWith(expected)) throw new Error(`seam: ${r.content[0].text}`);
  };
  await ask();
  return { cold: ms(process.hrtime.bigint() - started), ask };
}

async function throughSeamHttp() {
  const composition = writeComposition();
  const started = process.hrtime.bigint();
  const { child: seam, url } = await serveHttp(args.seam, composition, spawn);
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const { cold, ask } = await askThrough(client, started);
  const stop = async () => {
    await client.close();
    const exited = new Promise((resolve) => seam.once('exit', resolve));
    seam.kill('SIGTERM');
    await exited;
  };
  return { cold, ask, stop };
}

async function throughSeamStdio() {
  const composition = writeComposition();
  const started = process.hrtime.bigint();
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StdioClientTransport({ command: path.resolve(args.seam), args: ['serve', composition, '--no-watch'], cwd: project, stderr: 'ignore' }));
  const { cold, ask } = await askThrough(client, started);
  return { cold, ask, stop: () => client.close() };
}

// The same question by a minimal MCP client (bench/minimal-mcp.mjs): over stdio, or over Streamable HTTP.
async function throughMinimal(open) {
  const composition = writeComposition();
  const started = process.hrtime.bigint();
  const session = await open(composition);
  const ask = async () => {
    const m = await session.request('tools/call', { name: 'lsp', arguments: { operation: 'goToDefinition', file_path: 'src/main.ts', line: 5, character: 13 } });
    if (!m?.result?.content?.[0]?.text?.startsWith(expected)) throw new Error(`seam: ${JSON.stringify(m)}`);
  };
  await ask();
  return { cold: ms(process.hrtime.bigint() - started), ask, stop: session.stop };
}
const throughSeamStdioMinimal = () => throughMinimal((composition) => stdioSession(args.seam, composition, { cwd: project, spawn }));
const throughSeamHttpMinimal = () =>
  throughMinimal(async (composition) => {
    const { child, url } = await serveHttp(args.seam, composition, spawn);
    return httpSession(url, child);
  });

const all = {
  a: ['direct LSP client', direct],
  b: ['seam serve (MCP over HTTP)', throughSeamHttp],
  c: ['seam serve (MCP over stdio)', throughSeamStdio],
  d: ['seam serve (MCP over stdio, minimal client)', throughSeamStdioMinimal],
  e: ['seam serve (MCP over HTTP, minimal client)', throughSeamHttpMinimal],
};
const paths = [];
for (const key of (args.only || 'a,b,c,d,e').split(',')) {
  const [name, start] = all[key];
  paths.push({ name, ...(await start()), warm: [] });
}
for (let i = 0; i < RUNS; i++) {
  for (let k = 0; k < paths.length; k++) {
    const p = paths[(i + k) % paths.length];
    const t = process.hrtime.bigint();
    await p.ask();
    p.warm.push(ms(process.hrtime.bigint() - t));
  }
}
for (const p of paths) await p.stop();
const rows = paths.map(({ name, cold, warm }) => ({ name, cold, p50: pct(warm, 50), p99: pct(warm, 99), mean: warm.reduce((a, b) => a + b, 0) / warm.length }));
console.log(`| path | cold first answer (ms) | warm p50 (ms) | warm p99 (ms) | warm mean (ms) |\n| --- | --- | --- | --- | --- |`);
for (const r of rows) console.log(`| ${r.name} | ${r.cold.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.mean.toFixed(2)} |`);
for (const r of rows.slice(1)) console.log(`\nwarm overhead ratio, ${r.name} (p50 seam / p50 direct): ${(r.p50 / rows[0].p50).toFixed(2)}x; p99: ${(r.p99 / rows[0].p99).toFixed(2)}x`);
