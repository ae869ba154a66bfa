// A small language server whose failures the tests choose (env FAKE_LSP):
//   ok            answers every question (hover: "fake hover at L:C")
//   crash-on-open the first FAKE_LSP_CRASHES processes exit on didOpen (counted in FAKE_LSP_STATE)
//   hang          never answers a question
//   hang-all      never answers a question, nor `shutdown` (a server stuck in a computation)
//   malformed     answers definition with a location whose uri is a number
//   utf8          insists on utf-8 positions in its initialize answer
//   big-message   answers hover with a body over the mount's max_message_bytes
//   big-header    answers hover with a header block over 64 KiB
//   no-hover      offers no hoverProvider
//   ask           answers hover with the client's answers to its own requests (configuration, applyEdit, an unknown
//                 one, and whether an id nested 200 deep came back as sent)
//   lifecycle     answers hover with how many documents were opened and closed before it
//   hang-once     never answers its first question; answers the later ones
//   slow          answers hover after FAKE_LSP_DELAY_MS (a busy but healthy server)
// FAKE_LSP_LOG=FILE: a line `PID opened URI` per didOpen and `PID closed URI` per didClose.
// In every mode the document lifecycle is checked: a document opened twice, closed while not open, or
// asked about while not open is a protocol error, and every question after it is answered with that error.
import fs from 'node:fs';

const mode = process.env.FAKE_LSP || 'ok';
let buffer = Buffer.alloc(0);
// The client's answers to our own requests, by id (reported back in `hover` under FAKE_LSP=ask).
const answers = {};
let heldHover = null;
const deepId = JSON.parse('['.repeat(200) + ']'.repeat(200));
let questions = 0;
const openDocuments = new Set();
let opened = 0;
let closed = 0;
let violation = null;
function replyHeld() {
  if (heldHover === null || !['cfg', 'edit', 'other', 'deep'].every((k) => k in answers)) return;
  send({ jsonrpc: '2.0', id: heldHover, result: { contents: JSON.stringify(answers) } });
  heldHover = null;
}

function send(message, extraHeader = '') {
  const body = Buffer.from(JSON.stringify(message));
  process.stdout.write(`${extraHeader}Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
}

function crashes() {
  const file = process.env.FAKE_LSP_STATE;
  const n = Number(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '0') + 1;
  fs.writeFileSync(file, String(n));
  return n <= Number(process.env.FAKE_LSP_CRASHES || '1');
}

function handle(m) {
  if (m.method === 'initialize') {
    const capabilities = { definitionProvider: true, referencesProvider: true, implementationProvider: true, hoverProvider: mode !== 'no-hover' };
    if (mode === 'utf8') capabilities.positionEncoding = 'utf-8';
    send({ jsonrpc: '2.0', id: m.id, result: { capabilities } });
    // A request of ours to the client, and notifications it must consume.
    send({ jsonrpc: '2.0', id: 'cfg', method: 'workspace/configuration', params: { items: [{ section: 'fake' }, { section: 'fake.depth' }] } });
    send({ jsonrpc: '2.0', id: 'edit', method: 'workspace/applyEdit', params: { edit: { changes: {} } } });
    send({ jsonrpc: '2.0', id: 'other', method: 'fake/unknown', params: {} });
    // An id nested deeper than a JSON parser's usual recursion limit (128): it must come back as sent.
    send({ jsonrpc: '2.0', id: deepId, method: 'fake/deep', params: {} });
    send({ jsonrpc: '2.0', method: 'window/logMessage', params: { type: 3, message: 'fake server up' } });
    return;
  }
  if (m.method === 'textDocument/didOpen') {
    const uri = m.params.textDocument.uri;
    if (openDocuments.has(uri)) violation ??= `didOpen of ${uri}, which is open`;
    openDocuments.add(uri);
    opened += 1;
    process.stderr.write(`opened ${uri}\n`);
    if (process.env.FAKE_LSP_LOG) fs.appendFileSync(process.env.FAKE_LSP_LOG, `${process.pid} opened ${uri}\n`);
    if (mode === 'crash-on-open' && crashes()) process.exit(3);
    return;
  }
  if (m.method === 'textDocument/didClose') {
    const uri = m.params.textDocument.uri;
    if (!openDocuments.delete(uri)) violation ??= `didClose of ${uri}, which is not open`;
    if (process.env.FAKE_LSP_LOG) fs.appendFileSync(process.env.FAKE_LSP_LOG, `${process.pid} closed ${uri}\n`);
    closed += 1;
    return;
  }
  if (m.method === 'shutdown') return mode === 'hang-all' ? undefined : send({ jsonrpc: '2.0', id: m.id, result: null });
  if (m.method === 'exit') process.exit(0);
  if (m.method === undefined && Array.isArray(m.id)) {
    answers.deep = JSON.stringify(m.id) === JSON.stringify(deepId) ? 'echoed' : `changed to ${JSON.stringify(m.id)}`;
    return replyHeld();
  }
  if (m.method === undefined && m.id !== undefined) {
    answers[m.id] = m.result ?? m.error;
    return replyHeld();
  }
  if (m.id === undefined || m.method === undefined) return;
  questions += 1;
  if (mode === 'hang' || mode === 'hang-all' || (mode === 'hang-once' && questions === 1)) return;
  const { line, character } = m.params.position || {};
  const uri = m.params.textDocument?.uri;
  if (uri !== undefined && !openDocuments.has(uri)) violation ??= `${m.method} on ${uri}, which is not open`;
  if (violation) return send({ jsonrpc: '2.0', id: m.id, error: { code: -32600, message: violation } });
  switch (m.method) {
    case 'textDocument/hover':
      if (mode === 'slow') {
        const delay = Number(process.env.FAKE_LSP_DELAY_MS || '1000');
        setTimeout(() => send({ jsonrpc: '2.0', id: m.id, result: { contents: { kind: 'markdown', value: `fake hover at ${line}:${character}` } } }), delay);
        return;
      }
      if (mode === 'big-message') return send({ jsonrpc: '2.0', id: m.id, result: { contents: 'x'.repeat(4096) } });
      if (mode === 'big-header') return send({ jsonrpc: '2.0', id: m.id, result: null }, `X-Filler: ${'a'.repeat(70000)}\r\n`);
      if (mode === 'lifecycle') return send({ jsonrpc: '2.0', id: m.id, result: { contents: `opened ${opened - 1} closed ${closed}` } });
      if (mode === 'ask') {
        // Answered once the client has answered all three of our requests (they may cross this one on the wire).
        heldHover = m.id;
        return replyHeld();
      }
      return send({ jsonrpc: '2.0', id: m.id, result: { contents: { kind: 'markdown', value: `fake hover at ${line}:${character}` } } });
    case 'textDocument/definition':
      if (mode === 'malformed') return send({ jsonrpc: '2.0', id: m.id, result: { uri: 5, range: 'nowhere' } });
      return send({ jsonrpc: '2.0', id: m.id, result: { uri, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } } } });
    default:
      return send({ jsonrpc: '2.0', id: m.id, result: [] });
  }
}

process.stdin.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n');
    if (end < 0) return;
    const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, end).toString())[1]);
    if (buffer.length < end + 4 + length) return;
    const body = buffer.subarray(end + 4, end + 4 + length).toString();
    buffer = buffer.subarray(end + 4 + length);
    handle(JSON.parse(body));
  }
});
