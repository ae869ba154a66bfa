// A target for the official MCP conformance suite's server scenarios
// (npm @modelcontextprotocol/conformance), written here on the official SDK's
// low-level Server: the tools, resources, prompts, completions and logging
// that the scenarios name, served over Streamable HTTP with sessions,
// resumable streams and DNS-rebinding protection.
//
//   node tests/peers/conformance-server.mjs [PORT]     (or PORT=N; 0 or none: any free port)
//
// Once listening it prints its endpoint, `http://127.0.0.1:N/mcp`, as the
// first line on stdout; everything else goes to stderr. Only 127.0.0.1.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const sdk = new URL('../../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Server } = await import(new URL('server/index.js', sdk));
const { StreamableHTTPServerTransport } = await import(new URL('server/streamableHttp.js', sdk));
const {
  CallToolRequestSchema, ListToolsRequestSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema, ListPromptsRequestSchema,
  GetPromptRequestSchema, CompleteRequestSchema, CreateMessageResultSchema, ElicitResultSchema, McpError, ErrorCode,
  isInitializeRequest,
} = await import(new URL('types.js', sdk));

const log = (...a) => console.error('[conformance-server]', ...a);

// A 1×1 PNG and a WAV file holding one silent sample.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const WAV = Buffer.concat([
  Buffer.from('RIFF'), u32(38), Buffer.from('WAVEfmt '), u32(16), u16(1), u16(1), u32(8000), u32(16000), u16(2), u16(16),
  Buffer.from('data'), u32(2), u16(0),
]).toString('base64');
function u32(n) { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; }
function u16(n) { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b; }

const NO_ARGS = { type: 'object', properties: {} };
const text = (t) => ({ type: 'text', text: t });

// ---- tools ----------------------------------------------------------------

/** name → { description, inputSchema, run(args, extra, server) }, listed in this order. */
const TOOLS = {
  test_simple_text: {
    description: 'Answers one text block',
    run: () => ({ content: [text('This is a simple text response for testing.')] }),
  },
  test_image_content: {
    description: 'Answers one image block (a 1x1 PNG)',
    run: () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
  },
  test_audio_content: {
    description: 'Answers one audio block (a one-sample WAV)',
    run: () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
  },
  test_embedded_resource: {
    description: 'Answers one embedded text resource',
    run: () => ({
      content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
    }),
  },
  test_multiple_content_types: {
    description: 'Answers a text, an image and an embedded resource',
    run: () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ],
    }),
  },
  test_tool_with_logging: {
    description: 'Logs three info lines while it runs, each after the previous one was sent',
    run: async (_args, extra, server) => {
      for (const line of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
        await logLine(server, extra, 'info', line);
      }
      return { content: [text('Tool with logging executed successfully')] };
    },
  },
  test_tool_with_progress: {
    description: 'Reports progress 0, 50 and 100 of 100 to the caller\'s progress token',
    run: async (_args, extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        for (const progress of [0, 50, 100]) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 100, message: `${progress} of 100` } });
        }
      }
      return { content: [text(`progress reported to ${JSON.stringify(progressToken ?? null)}`)] };
    },
  },
  test_error_handling: {
    description: 'Answers a tool error (isError)',
    run: () => ({ isError: true, content: [text('This tool intentionally returns an error for testing')] }),
  },
  test_reconnection: {
    description: 'Closes the request\'s SSE stream before answering, so the answer arrives after the client resumes (SEP-1699)',
    run: (_args, extra) => {
      sessions.get(extra.sessionId)?.transport.closeSSEStream(extra.requestId);
      return { content: [text('Answered after the stream was closed; the client resumed it.')] };
    },
  },
  test_sampling: {
    description: 'Asks the client for an LLM completion of `prompt` (sampling/createMessage)',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'What to ask the LLM' } }, required: ['prompt'] },
    run: async (args, extra, server) => {
      if (!server.getClientCapabilities()?.sampling) return refusal('the client did not declare sampling');
      const answer = await extra.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: text(String(args.prompt)) }], maxTokens: 100 } },
        CreateMessageResultSchema,
      );
      const said = Array.isArray(answer.content) ? answer.content.map((c) => c.text ?? '').join('') : answer.content?.text;
      return { content: [text(`LLM response: ${said ?? ''}`)] };
    },
  },
  test_elicitation: {
    description: 'Asks the user, through the client, for a response to `message` (elicitation/create)',
    inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'What to show the user' } }, required: ['message'] },
    run: (args, extra, server) => elicit(server, extra, String(args.message), {
      type: 'object',
      properties: {
        username: { type: 'string', description: 'The user\'s name' },
        email: { type: 'string', description: 'The user\'s email address' },
      },
      required: ['username', 'email'],
    }),
  },
  test_elicitation_sep1034_defaults: {
    description: 'Asks for a form whose every primitive field has a default (SEP-1034)',
    run: (_args, extra, server) => elicit(server, extra, 'Check these fields; each has a default', {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Name', default: 'John Doe' },
        age: { type: 'integer', description: 'Age', default: 30 },
        score: { type: 'number', description: 'Score', default: 95.5 },
        status: { type: 'string', description: 'Status', enum: ['active', 'inactive', 'pending'], default: 'active' },
        verified: { type: 'boolean', description: 'Verified', default: true },
      },
    }),
  },
  test_elicitation_sep1330_enums: {
    description: 'Asks for a form with each kind of enum field (SEP-1330)',
    run: (_args, extra, server) => elicit(server, extra, 'Pick from each list', {
      type: 'object',
      properties: {
        untitledSingle: { type: 'string', description: 'One of three', enum: ['option1', 'option2', 'option3'] },
        titledSingle: {
          type: 'string', description: 'One of three, titled',
          oneOf: [{ const: 'value1', title: 'First' }, { const: 'value2', title: 'Second' }, { const: 'value3', title: 'Third' }],
        },
        legacyEnum: { type: 'string', description: 'One of three, titled the old way', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['One', 'Two', 'Three'] },
        untitledMulti: { type: 'array', description: 'Some of three', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: {
          type: 'array', description: 'Some of three, titled',
          items: { anyOf: [{ const: 'value1', title: 'First' }, { const: 'value2', title: 'Second' }, { const: 'value3', title: 'Third' }] },
        },
      },
    }),
  },
  json_schema_2020_12_tool: {
    description: 'Has an input schema using JSON Schema 2020-12 keywords (SEP-1613)',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
    run: (args) => ({ content: [text(`called with ${JSON.stringify(args)}`)] }),
  },
};

const refusal = (why) => ({ isError: true, content: [text(why)] });

async function elicit(server, extra, message, requestedSchema) {
  if (!server.getClientCapabilities()?.elicitation) return refusal('the client did not declare elicitation');
  const answer = await extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema } }, ElicitResultSchema);
  return { content: [text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`)] };
}

/** A log line on the calling request's stream, unless the session's `logging/setLevel` filters it out. */
async function logLine(server, extra, level, data) {
  if (server.isMessageIgnored(level, extra.sessionId)) return;
  await extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'conformance-server', data } });
}

// ---- resources --------------------------------------------------------------

const RESOURCES = [
  {
    uri: 'test://static-text', name: 'static-text', title: 'Static text', description: 'A text resource', mimeType: 'text/plain',
    contents: { text: 'This is the content of the static text resource.' },
  },
  {
    uri: 'test://static-binary', name: 'static-binary', title: 'Static binary', description: 'A binary resource (a PNG)', mimeType: 'image/png',
    contents: { blob: PNG },
  },
  {
    uri: 'test://watched-resource', name: 'watched-resource', title: 'Watched', description: 'A resource one may subscribe to', mimeType: 'text/plain',
    contents: { text: 'Watched resource content' },
  },
];
const TEMPLATE = {
  uriTemplate: 'test://template/{id}/data', name: 'template', title: 'Data by id', description: 'JSON data for an id', mimeType: 'application/json',
};
const TEMPLATE_MATCH = /^test:\/\/template\/([^/]+)\/data$/;

function read(uri) {
  const listed = RESOURCES.find((r) => r.uri === uri);
  if (listed) return { contents: [{ uri, mimeType: listed.mimeType, ...listed.contents }] };
  const id = TEMPLATE_MATCH.exec(uri)?.[1];
  if (id !== undefined) {
    const data = { id: decodeURIComponent(id), templateTest: true, data: `Data for ID: ${decodeURIComponent(id)}` };
    return { contents: [{ uri, mimeType: TEMPLATE.mimeType, text: JSON.stringify(data) }] };
  }
  throw new McpError(-32002, `Resource not found: ${uri}`, { uri });
}

// ---- prompts ----------------------------------------------------------------

const PROMPTS = {
  test_simple_prompt: {
    title: 'Simple', description: 'A prompt without arguments',
    messages: () => [{ role: 'user', content: text('This is a simple prompt for testing.') }],
  },
  test_prompt_with_arguments: {
    title: 'With arguments', description: 'A prompt with two required arguments',
    arguments: [
      { name: 'arg1', description: 'The first argument', required: true },
      { name: 'arg2', description: 'The second argument', required: true },
    ],
    messages: (a) => [{ role: 'user', content: text(`Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'`) }],
  },
  test_prompt_with_embedded_resource: {
    title: 'With an embedded resource', description: 'A prompt that embeds the resource it is given',
    arguments: [{ name: 'resourceUri', description: 'The URI to embed', required: true }],
    messages: (a) => [
      { role: 'user', content: { type: 'resource', resource: { uri: a.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: text('Please process the embedded resource above.') },
    ],
  },
  test_prompt_with_image: {
    title: 'With an image', description: 'A prompt holding an image',
    messages: () => [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: text('Please analyze the image above.') },
    ],
  },
};

/** Candidate values for `completion/complete`, by prompt and argument. */
const COMPLETIONS = { test_prompt_with_arguments: { arg1: ['paris', 'park', 'party'], arg2: ['red', 'green', 'blue'] } };

// ---- the server of one session -------------------------------------------------

function makeServer() {
  const server = new Server(
    { name: 'seam-conformance-target', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
    },
  );
  const subscriptions = new Set();

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: Object.entries(TOOLS).map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema ?? NO_ARGS })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = TOOLS[request.params.name];
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    return tool.run(request.params.arguments ?? {}, extra, server);
  });

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: RESOURCES.map(({ contents: _, ...resource }) => resource),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [TEMPLATE] }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => read(request.params.uri));
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    read(request.params.uri);
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: Object.entries(PROMPTS).map(([name, p]) => ({ name, title: p.title, description: p.description, ...(p.arguments ? { arguments: p.arguments } : {}) })),
  }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    const prompt = PROMPTS[request.params.name];
    if (!prompt) throw new McpError(ErrorCode.InvalidParams, `Prompt ${request.params.name} not found`);
    const args = request.params.arguments ?? {};
    const missing = (prompt.arguments ?? []).filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
    if (missing.length) throw new McpError(ErrorCode.InvalidParams, `Missing required arguments: ${missing.join(', ')}`);
    return { description: prompt.description, messages: prompt.messages(args) };
  });

  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const { ref, argument } = request.params;
    const candidates = ref.type === 'ref/prompt' ? COMPLETIONS[ref.name]?.[argument.name] ?? [] : [];
    const values = candidates.filter((v) => v.startsWith(argument.value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  // logging/setLevel is the SDK's own: it keeps the level per session, read by `logLine`.
  return server;
}

// ---- resumable streams: every event a session sends, kept for Last-Event-ID ----

function eventStore() {
  const events = []; // { id, streamId, message }, in the order sent
  return {
    async storeEvent(streamId, message) {
      const id = `${streamId}_${events.length}`;
      events.push({ id, streamId, message });
      return id;
    },
    async getStreamIdForEventId(id) {
      return events.find((e) => e.id === id)?.streamId;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const at = events.findIndex((e) => e.id === lastEventId);
      if (at < 0) throw new Error(`unknown event ${lastEventId}`);
      const { streamId } = events[at];
      for (const e of events.slice(at + 1)) if (e.streamId === streamId) await send(e.id, e.message);
      return streamId;
    },
  };
}

// ---- HTTP -------------------------------------------------------------------

/** Session id → { transport, server }. */
const sessions = new Map();

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
/** The host name of a Host header or an Origin, or undefined when it cannot be read. */
function hostname(value, isOrigin) {
  try {
    return new URL(isOrigin ? value : `http://${value}`).hostname;
  } catch {
    return undefined;
  }
}

function refuse(res, status, code, message) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function handle(req, res) {
  if (new URL(req.url, 'http://127.0.0.1').pathname !== '/mcp') return refuse(res, 404, -32601, 'not found: the endpoint is /mcp');
  // DNS rebinding: a browser led here by another name carries that name in Host and Origin.
  if (!LOOPBACK.has(hostname(req.headers.host ?? '', false))) return refuse(res, 403, -32000, `Host not allowed: ${req.headers.host}`);
  if (req.headers.origin !== undefined && !LOOPBACK.has(hostname(req.headers.origin, true))) {
    return refuse(res, 403, -32000, `Origin not allowed: ${req.headers.origin}`);
  }
  const id = req.headers['mcp-session-id'];
  let parsed;
  if (req.method === 'POST') {
    try {
      parsed = JSON.parse(await body(req));
    } catch {
      return refuse(res, 400, ErrorCode.ParseError, 'Parse error: the body is not JSON');
    }
  }
  if (id !== undefined) {
    const session = sessions.get(id);
    if (!session) return refuse(res, 404, -32001, 'Session not found');
    return session.transport.handleRequest(req, res, parsed);
  }
  const opens = req.method === 'POST' && (Array.isArray(parsed) ? parsed.some(isInitializeRequest) : isInitializeRequest(parsed));
  if (!opens) return refuse(res, 400, -32000, 'Bad Request: no session id, and not an initialize request');
  const server = makeServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: eventStore(),
    retryInterval: 500,
    onsessioninitialized: (sid) => sessions.set(sid, { transport, server }),
    onsessionclosed: (sid) => sessions.delete(sid),
  });
  transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
  await server.connect(transport);
  return transport.handleRequest(req, res, parsed);
}

const port = Number(process.argv[2] ?? process.env.PORT ?? 0);
const listener = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    log('request failed:', e);
    if (!res.headersSent) refuse(res, 500, ErrorCode.InternalError, 'Internal error');
  });
});
listener.listen(port, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${listener.address().port}/mcp\n`);
});
