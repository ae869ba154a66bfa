// A stdio MCP server whose misbehaviour is chosen by environment variables,
// used by seam's tests to exercise failure paths. See the FLAKY_* variables
// below. Logs go to stderr only; stdout carries the JSON-RPC stream.
// FLAKY_HTTP_PORT=N serves Streamable HTTP (stateless) on 127.0.0.1:N instead,
// and the `headers` tool answers the headers of the request that called it.
// FLAKY_LINKS=LABEL adds a `link` tool answering resource links ({uri}, or {uri}/0 …
// {uri}/count-1) and serves resources: reading any URI answers `LABEL: URI`.
// FLAKY_LOG=1 declares logging and adds a `log` tool that logs its `message` at info
// (a `notifications/message` tied to no request) before it answers.
// Over stdio, FLAKY_HEARD=FILE appends `<ms since the epoch> <method>` for each message
// received, and FLAKY_IGNORE=METHOD,… leaves requests of those methods unanswered.
import fs from 'node:fs';
import http from 'node:http';

const sdk = new URL('../../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Server } = await import(new URL('server/index.js', sdk));
const { StdioServerTransport } = await import(new URL('server/stdio.js', sdk));
const {
  CallToolRequestSchema, ListToolsRequestSchema, ListResourcesRequestSchema, ReadResourceRequestSchema,
  ListPromptsRequestSchema, GetPromptRequestSchema, McpError, ErrorCode,
} = await import(new URL('types.js', sdk));

const env = process.env;
const log = (...a) => console.error('[flaky]', ...a);

// Side effects at start, before anything can fail.
if (env.FLAKY_PID_FILE) fs.appendFileSync(env.FLAKY_PID_FILE, `${process.pid}\n`);
if (env.FLAKY_ENV_DUMP) fs.writeFileSync(env.FLAKY_ENV_DUMP, JSON.stringify(process.env));
// FLAKY_EXIT_FILE=FILE: while FILE exists, a new process exits(1) at once, before any handshake.
if (env.FLAKY_EXIT_FILE && fs.existsSync(env.FLAKY_EXIT_FILE)) {
  log('exiting at start (FLAKY_EXIT_FILE exists)');
  process.exit(1);
}

// Floods for the chaos tests: FLAKY_FLOOD_STDERR_MB megabytes of stderr at start, and
// FLAKY_FLOOD_STDOUT_MB megabytes of one garbage line on stdout before the first message.
if (env.FLAKY_FLOOD_STDERR_MB) {
  const mb = 'x'.repeat(1023) + '\n';
  for (let i = 0; i < Number(env.FLAKY_FLOOD_STDERR_MB) * 1024; i++) process.stderr.write(mb);
}
if (env.FLAKY_FLOOD_STDOUT_MB) {
  const chunk = 'y'.repeat(1024 * 1024);
  for (let i = 0; i < Number(env.FLAKY_FLOOD_STDOUT_MB); i++) process.stdout.write(chunk);
  process.stdout.write('\n');
}

// Raw names, deliberately not validated (dots, spaces, very long names all allowed).
let names = (env.FLAKY_TOOLS ?? 'ping').split(',').filter((n) => n !== '');

const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const obj = (properties, required) => ({ type: 'object', properties, ...(required ? { required } : {}) });

const CONTROL = [
  { name: 'set_tools', description: 'Replace the FLAKY_TOOLS list and notify', inputSchema: obj({ names: { type: 'array', items: { type: 'string' } } }, ['names']) },
  { name: 'crash', description: 'Exit(1) without answering', inputSchema: obj({}) },
  { name: 'hang', description: 'Never answer', inputSchema: obj({}) },
  { name: 'sleep', description: 'Answer after ms', inputSchema: obj({ ms: { type: 'number' } }) },
  { name: 'pid', description: 'Answer the process id', inputSchema: obj({}) },
  { name: 'image', description: 'Answer a text and an image block', inputSchema: obj({}) },
  {
    name: 'structured', description: 'Answer structured content', inputSchema: obj({}),
    outputSchema: obj({ n: { type: 'number' } }, ['n']),
  },
  { name: 'fail', description: 'Answer a tool error (isError)', inputSchema: obj({}) },
  {
    name: 'bad_structured', description: 'Answer structured content that breaks its output schema', inputSchema: obj({}),
    outputSchema: obj({ n: { type: 'number' } }, ['n']),
  },
  { name: 'headers', description: 'Answer the HTTP request headers (HTTP mode)', inputSchema: obj({}) },
  { name: 'rpc_error', description: 'Answer a JSON-RPC error instead of a result', inputSchema: obj({}) },
];

function allTools() {
  const list = env.FLAKY_DUPLICATE === '1' && names.length > 0 ? [names[0], ...names] : names;
  const flaky = list.map((name) => ({
    name, description: `Echo tool ${name}`, inputSchema: obj({ message: { type: 'string' } }),
  }));
  const logs = env.FLAKY_LOG ? [{ name: 'log', description: 'Log the message at info', inputSchema: obj({ message: { type: 'string' } }) }] : [];
  const links = env.FLAKY_LINKS
    ? [{ name: 'link', description: 'Answer resource links', inputSchema: obj({ uri: { type: 'string' }, count: { type: 'number' } }, ['uri']) }]
    : [];
  return [...flaky, ...CONTROL, ...links, ...logs];
}

if (env.FLAKY_HANG_STARTUP === '1') {
  // Never connect the transport, so initialize is never answered; stay alive.
  log('hanging at startup');
  setInterval(() => {}, 1 << 30);
} else {
  const makeServer = (headers) => {
  const capabilities = {
    tools: { listChanged: true },
    ...(env.FLAKY_LINKS ? { resources: {} } : {}),
    ...(env.FLAKY_PROMPTS ? { prompts: {} } : {}),
    ...(env.FLAKY_LOG ? { logging: {} } : {}),
  };
  const server = new Server({ name: 'flaky-mcp-server', version: '0.1.0' }, { capabilities });
  // FLAKY_PROMPTS=a,b serves these prompts, each answering its own name.
  if (env.FLAKY_PROMPTS) {
    const prompts = env.FLAKY_PROMPTS.split(',').filter((n) => n !== '');
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: prompts.map((name) => ({ name })) }));
    server.setRequestHandler(GetPromptRequestSchema, async (req) => ({
      messages: [{ role: 'user', content: { type: 'text', text: req.params.name } }],
    }));
  }
  if (env.FLAKY_LINKS) {
    server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: [] }));
    server.setRequestHandler(ReadResourceRequestSchema, async (req) => ({
      contents: [{ uri: req.params.uri, mimeType: 'text/plain', text: `${env.FLAKY_LINKS}: ${req.params.uri}` }],
    }));
  }

  server.setRequestHandler(ListToolsRequestSchema, async (req) => {
    if (env.FLAKY_LIST_FAIL_FILE && fs.existsSync(env.FLAKY_LIST_FAIL_FILE)) {
      throw new McpError(ErrorCode.InternalError, 'tools/list failing (FLAKY_LIST_FAIL_FILE exists)');
    }
    const tools = allTools();
    const size = Number(env.FLAKY_PAGE_SIZE) || 0;
    if (env.FLAKY_REPEAT_CURSOR === '1') {
      // Broken pagination: the same first page and the same cursor, forever.
      return { tools: size > 0 ? tools.slice(0, size) : tools, nextCursor: 'again' };
    }
    if (size <= 0) return { tools };
    // The cursor is the decimal offset of the next page.
    const cursor = req.params?.cursor;
    const offset = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(offset) || offset < 0) throw new McpError(ErrorCode.InvalidParams, `bad cursor: ${cursor}`);
    const end = offset + size;
    return { tools: tools.slice(offset, end), ...(end < tools.length ? { nextCursor: String(end) } : {}) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { name, arguments: args = {} } = req.params;
    // FLAKY_CANCEL_LOG=FILE: one line per call the client cancelled (`notifications/cancelled`).
    if (env.FLAKY_CANCEL_LOG) {
      extra.signal.addEventListener('abort', () => fs.appendFileSync(env.FLAKY_CANCEL_LOG, `${name} cancelled\n`));
    }
    switch (name) {
      case 'set_tools':
        names = (args.names ?? []).map(String);
        await server.sendToolListChanged(); // sent before the answer, in stream order
        return text('ok');
      case 'crash':
        log('crashing (crash tool)');
        process.exit(1);
      case 'hang':
        return new Promise(() => {});
      case 'sleep':
        await new Promise((r) => setTimeout(r, Number(args.ms) || 0));
        return text('slept');
      case 'pid':
        return text(String(process.pid));
      case 'image':
        return { content: [{ type: 'text', text: 'an image' }, { type: 'image', data: PNG_1X1, mimeType: 'image/png' }] };
      case 'structured':
        return { content: [{ type: 'text', text: '{"n":42}' }], structuredContent: { n: 42 } };
      case 'fail':
        return { content: [{ type: 'text', text: 'it failed' }], isError: true };
      case 'bad_structured':
        return { content: [{ type: 'text', text: '{"n":"x"}' }], structuredContent: { n: 'x' } };
      case 'headers':
        return text(JSON.stringify(headers ?? {}));
      case 'rpc_error':
        throw new McpError(ErrorCode.InternalError, 'it broke on purpose');
      case 'log':
        if (!env.FLAKY_LOG) break;
        await server.sendLoggingMessage({ level: 'info', data: args.message ?? '' });
        return text('logged');
      case 'link': {
        if (!env.FLAKY_LINKS) break;
        const uris = args.count === undefined ? [args.uri] : Array.from({ length: Number(args.count) }, (_, i) => `${args.uri}/${i}`);
        return { content: uris.map((uri) => ({ type: 'resource_link', uri, name: uri })) };
      }
    }
    // FLAKY_ANSWER_BYTES=N: the echo tools answer N bytes of text instead (one line past a client's limit, say).
    if (names.includes(name) && env.FLAKY_ANSWER_BYTES) return text('z'.repeat(Number(env.FLAKY_ANSWER_BYTES)));
    if (names.includes(name)) return text(`${name}: ${args.message ?? ''}`);
    throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  });

  return server;
  };

  if (env.FLAKY_HTTP_PORT) {
    // Stateless Streamable HTTP: a fresh server and transport per request.
    const { StreamableHTTPServerTransport } = await import(new URL('server/streamableHttp.js', sdk));
    http.createServer(async (req, res) => {
      const server = makeServer(req.headers);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => { transport.close(); server.close(); });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    }).listen(Number(env.FLAKY_HTTP_PORT), '127.0.0.1', () => log(`listening on port ${env.FLAKY_HTTP_PORT}`));
  } else {
    // Exit when the client goes away (a pending `hang`/`sleep` must not keep us alive).
    process.stdin.on('end', () => process.exit(0));
    const transport = new StdioServerTransport();
    await makeServer().connect(transport);
    // Wrapped before any input is read: the connect resolved in a microtask, stdin is read in a later task.
    const ignored = (env.FLAKY_IGNORE ?? '').split(',').filter((m) => m !== '');
    const handle = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (env.FLAKY_HEARD && message.method) fs.appendFileSync(env.FLAKY_HEARD, `${Date.now()} ${message.method}\n`);
      if (message.id !== undefined && ignored.includes(message.method)) return log(`ignoring ${message.method} (FLAKY_IGNORE)`);
      handle(message, extra);
    };
    log(`ready, tools: ${JSON.stringify(names)}`);
  }
}
