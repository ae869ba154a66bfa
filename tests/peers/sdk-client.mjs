// Line-protocol driver around the official MCP SDK client, used by seam's
// tests to talk to seam (or any server) as a real SDK client would.
//   node sdk-client.mjs stdio CMD [ARGS...]
//   node sdk-client.mjs http URL        (env SEAM_TOKEN -> Authorization: Bearer)
// Prints one `connected` line, then answers each JSON command read from stdin
// with exactly one JSON line on stdout, strictly in order. Diagnostics go to stderr.
import readline from 'node:readline';

const sdk = new URL('../../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdk));
const { StdioClientTransport } = await import(new URL('client/stdio.js', sdk));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdk));
const {
  ToolListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  LoggingMessageNotificationSchema,
  ListRootsRequestSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
  ResultSchema,
} = await import(new URL('types.js', sdk));

const out = (obj) => new Promise((r) => process.stdout.write(JSON.stringify(obj) + '\n', r));
const errorLine = (e) => ({ ok: false, error: e?.message ?? String(e), code: typeof e?.code === 'number' ? e.code : null, data: e?.data ?? null });

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'stdio' && target) {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: 'inherit' });
} else if (mode === 'http' && target) {
  const headers = process.env.SEAM_TOKEN ? { Authorization: `Bearer ${process.env.SEAM_TOKEN}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error('usage: sdk-client.mjs stdio CMD [ARGS...] | http URL');
  process.exit(2);
}

// env SEAM_ROOTS (paths joined by ':'): the client offers these folders as its roots.
const roots = process.env.SEAM_ROOTS ? process.env.SEAM_ROOTS.split(':') : null;
// env SEAM_ANSWERS=1: the client also declares sampling and elicitation (form and URL) and answers them:
// sampling with `sampled: <the last message's text>`, a form with `{ name: 'seam' }`, a URL by accepting.
// Each request a server makes of the client is kept for `asked`.
const answers = process.env.SEAM_ANSWERS === '1';
// env SEAM_ANSWER_AFTER_MS: each answer comes that long after its question, as a person's would.
const answerAfter = Number(process.env.SEAM_ANSWER_AFTER_MS ?? 0);
const thinking = () => new Promise((r) => setTimeout(r, answerAfter));
const capabilities = {};
if (roots) capabilities.roots = { listChanged: true };
if (answers) Object.assign(capabilities, { sampling: {}, elicitation: { form: {}, url: {} } });
const client = new Client({ name: 'seam-test-sdk-client', version: '0.1.0' }, { capabilities });
const asked = [];
if (roots) {
  client.setRequestHandler(ListRootsRequestSchema, () => {
    asked.push({ method: 'roots/list' });
    return { roots: roots.map((p) => ({ uri: new URL(`file://${p}`).href, name: p })) };
  });
}
if (answers) {
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push({ method: 'sampling/createMessage', params: request.params });
    await thinking();
    const last = request.params.messages.at(-1)?.content;
    return { role: 'assistant', model: 'seam-test', content: { type: 'text', text: `sampled: ${last?.text ?? ''}` } };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push({ method: 'elicitation/create', params: request.params });
    await thinking();
    return request.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { name: 'seam' } };
  });
}

// list_changed bookkeeping, per list (`tools`, `prompts`, `resources`): `received` counts
// notifications, `consumed` counts those already handed out by a wait; `wake`
// is the pending waiter.
const lists = {
  tools: { received: 0, consumed: 0, wake: null },
  prompts: { received: 0, consumed: 0, wake: null },
  resources: { received: 0, consumed: 0, wake: null },
};
const notified = (list) => () => {
  list.received += 1;
  list.wake?.();
};
client.setNotificationHandler(ToolListChangedNotificationSchema, notified(lists.tools));
client.setNotificationHandler(PromptListChangedNotificationSchema, notified(lists.prompts));
client.setNotificationHandler(ResourceListChangedNotificationSchema, notified(lists.resources));
// Log lines and resource updates, kept in arrival order; `seen.wake` is the pending waiter.
const seen = { logs: [], updates: [], completions: [], wake: null };
client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => { seen.completions.push(n.params); seen.wake?.(); });
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { seen.logs.push(n.params); seen.wake?.(); });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { seen.updates.push(n.params); seen.wake?.(); });

// The first kept notification of `list` that `matches`, now or once it arrives.
function waitSeen(list, matches, timeoutMs) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { seen.wake = null; resolve({ ok: false, error: 'timeout', seen: seen[list] }); }, timeoutMs);
    seen.wake = () => {
      const found = seen[list].find(matches);
      if (found) { clearTimeout(timer); seen.wake = null; resolve({ ok: true, found }); }
    };
    seen.wake();
  });
}
let closing = false; // errors raised while closing (aborted streams) are expected noise
const transportErrors = [];
client.onerror = (e) => {
  if (closing) return;
  transportErrors.push(String(e?.message ?? e));
  console.error('[sdk-client] transport error:', e?.message ?? e);
};

function waitListChanged(list, timeoutMs) {
  return new Promise((resolve) => {
    const done = (ok) => {
      clearTimeout(timer);
      list.wake = null;
      if (ok) list.consumed += 1;
      resolve(ok ? { ok: true, count: list.received } : { ok: false, error: 'timeout' });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    list.wake = () => { if (list.received > list.consumed) done(true); };
    list.wake();
  });
}

// The running `hammer_start`, if any: its counts, and the waiter of `hammer_next`.
let hammer = null;
const notHammering = { ok: false, error: 'not hammering', code: null };
// Whole messages kept of each kind of failure.
const SAMPLES = 3;

// A failure's kind names what failed without the cause's details, which vary from one failure to the
// next: the message's first line up to its second `: `, which for seam's errors is `CODE: what failed`
// (`MCP_UNAVAILABLE: MCP server `a` is unavailable`, before `: reconnecting …`).
const head = (message) => message.split('\n', 1)[0].split(': ', 2).join(': ');

// Counts a failure under its kind, and keeps its message if its kind has fewer than SAMPLES.
function fail(h, kind, message) {
  h.failed += 1;
  h.kinds[kind] = (h.kinds[kind] ?? 0) + 1;
  const kept = (h.samples[kind] ??= []);
  if (kept.length < SAMPLES) kept.push(message);
}

// What a hammer has counted: `calls` made, of which `succeeded` and `failed`; `kinds` maps each kind of
// failure to its count (`tool error: <head>` for an error result, `wrong answer` for an answer that does
// not start with `expect`, `thrown: <head>` for a request that got no result), `samples` to a few messages.
function tally(h) {
  return { ok: true, calls: h.ok + h.failed, succeeded: h.ok, failed: h.failed, kinds: { ...h.kinds }, samples: structuredClone(h.samples) };
}

async function listAll() {
  const tools = [];
  const seen = new Set();
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    // Guard against a peer that repeats cursors, which would otherwise loop forever.
    if (cursor !== undefined && seen.has(cursor)) throw new Error(`repeated cursor: ${cursor}`);
    seen.add(cursor);
  } while (cursor !== undefined);
  return tools;
}

// Every page of a list; `key` names the page's items.
async function paged(list, key) {
  const items = [];
  const seen = new Set();
  let cursor;
  do {
    const page = await list(cursor === undefined ? {} : { cursor });
    items.push(...page[key]);
    cursor = page.nextCursor;
    if (cursor !== undefined && seen.has(cursor)) throw new Error(`repeated cursor: ${cursor}`);
    seen.add(cursor);
  } while (cursor !== undefined);
  return items;
}

async function closeClient() {
  closing = true;
  try { await client.close(); } catch (e) { console.error('[sdk-client] close error:', e?.message ?? e); }
}

async function handle(cmd) {
  switch (cmd.op) {
    case 'list':
      return { ok: true, tools: await listAll() };
    case 'call': {
      // With `progress`, the call asks for progress and its notifications come back beside the result.
      const progress = [];
      const opts = {};
      if (cmd.timeout_ms !== undefined) opts.timeout = cmd.timeout_ms;
      if (cmd.progress) opts.onprogress = (p) => progress.push(p);
      const result = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} }, undefined, opts);
      return cmd.progress ? { ok: true, result, progress } : { ok: true, result };
    }
    case 'call_all':
      // Every call in flight at once; the results in the order of the calls.
      return { ok: true, results: await Promise.all(cmd.calls.map((c) => client.callTool({ name: c.name, arguments: c.args ?? {} }))) };
    case 'hammer_start': {
      // Calls the tool over and over, one at a time, until hammer_stop. Every call is counted: as a
      // success, or as a failure under its kind (see `fail`).
      if (hammer) return { ok: false, error: 'already hammering', code: null };
      hammer = { stop: false, ok: 0, failed: 0, kinds: {}, samples: {}, wake: null };
      const h = hammer;
      h.done = (async () => {
        while (!h.stop) {
          try {
            const r = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} });
            const text = typeof r.content?.[0]?.text === 'string' ? r.content[0].text : JSON.stringify(r.content);
            if (r.isError) fail(h, `tool error: ${head(text)}`, text);
            // With `expect`, an answer must start with it: a wrong answer is a failure too.
            else if (cmd.expect !== undefined && !text.startsWith(cmd.expect)) fail(h, 'wrong answer', text);
            else {
              h.ok += 1;
              h.wake?.();
            }
          } catch (e) {
            const message = e?.message ?? String(e);
            fail(h, `thrown: ${head(message)}`, message);
          }
        }
      })();
      return { ok: true };
    }
    case 'hammer_tally':
      // The counts so far; the hammer goes on.
      return hammer ? tally(hammer) : notHammering;
    case 'hammer_next': {
      // The counts once a call that ends after this command has succeeded; `ok: false` after timeout_ms.
      if (!hammer) return notHammering;
      const h = hammer;
      const before = h.ok;
      return new Promise((resolve) => {
        const timer = setTimeout(() => { h.wake = null; resolve({ ...tally(h), ok: false, error: 'timeout' }); }, cmd.timeout_ms ?? 5000);
        h.wake = () => {
          if (h.ok > before) { clearTimeout(timer); h.wake = null; resolve(tally(h)); }
        };
      });
    }
    case 'hammer_stop': {
      if (!hammer) return notHammering;
      hammer.stop = true;
      await hammer.done;
      const counts = tally(hammer);
      hammer = null;
      return counts;
    }
    case 'wait_list_changed':
      return waitListChanged(lists.tools, cmd.timeout_ms ?? 5000);
    case 'end_session':
      // Over HTTP: DELETE the session, as a client that is done with it does.
      await transport.terminateSession();
      return { ok: true };
    case 'transport_errors':
      return { ok: true, errors: transportErrors };
    case 'count_list_changed':
      return { ok: true, count: lists.tools.received };
    case 'wait_prompt_list_changed':
      return waitListChanged(lists.prompts, cmd.timeout_ms ?? 5000);
    case 'wait_resource_list_changed':
      return waitListChanged(lists.resources, cmd.timeout_ms ?? 5000);
    case 'set_level':
      return { ok: true, result: await client.setLoggingLevel(cmd.level) };
    case 'subscribe':
      return { ok: true, result: await client.subscribeResource({ uri: cmd.uri }) };
    case 'subscribe_many': {
      // Subscribes to each URI in turn: how many were taken, and the first refusal.
      let taken = 0;
      for (const uri of cmd.uris) {
        try { await client.subscribeResource({ uri }); taken += 1; } catch (e) { return { ok: true, taken, refused: errorLine(e) }; }
      }
      return { ok: true, taken, refused: null };
    }
    case 'unsubscribe':
      return { ok: true, result: await client.unsubscribeResource({ uri: cmd.uri }) };
    case 'wait_log': {
      // With `count`, the count-th log line that contains the text.
      const has = (l) => JSON.stringify(l).includes(cmd.contains);
      const nth = cmd.count ?? 1;
      return waitSeen('logs', (l) => has(l) && seen.logs.filter(has).indexOf(l) === nth - 1, cmd.timeout_ms ?? 5000);
    }
    case 'wait_elicitation_complete':
      return waitSeen('completions', (c) => c.elicitationId === cmd.id, cmd.timeout_ms ?? 5000);
    case 'wait_resource_updated':
      return waitSeen('updates', (u) => u.uri === cmd.uri, cmd.timeout_ms ?? 5000);
    case 'logs':
      return { ok: true, logs: seen.logs };
    case 'asked':
      return { ok: true, asked };
    case 'count_prompt_list_changed':
      return { ok: true, count: lists.prompts.received };
    case 'prompts':
      return { ok: true, prompts: (await client.listPrompts()).prompts };
    case 'get_prompt':
      return { ok: true, result: await client.getPrompt({ name: cmd.name, arguments: cmd.args ?? {} }) };
    case 'resources':
      return { ok: true, resources: await paged((cursor) => client.listResources(cursor), 'resources') };
    case 'templates':
      return { ok: true, templates: await paged((cursor) => client.listResourceTemplates(cursor), 'resourceTemplates') };
    case 'read':
      return { ok: true, result: await client.readResource({ uri: cmd.uri }) };
    case 'complete':
      return { ok: true, result: await client.complete({ ref: cmd.ref, argument: cmd.argument, context: cmd.context }) };
    case 'request':
      // Any request as given (`method`, `params`), for what the SDK has no method for.
      return { ok: true, result: await client.request({ method: cmd.method, params: cmd.params ?? {} }, ResultSchema.passthrough()) };
    case 'server':
      // What the server said of itself at initialization.
      return { ok: true, capabilities: client.getServerCapabilities() ?? null, instructions: client.getInstructions() ?? null };
    default:
      return { ok: false, error: `unknown op: ${cmd.op}`, code: null };
  }
}

try {
  await client.connect(transport);
} catch (e) {
  const { error, code } = errorLine(e);
  await out({ ok: false, event: 'connected', error, code });
  await closeClient();
  process.exit(1);
}
await out({ ok: true, event: 'connected', server: client.getServerVersion() ?? null });

// The async iterator buffers lines, so commands are handled one at a time, in order.
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line.trim() === '') continue;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (e) {
    await out({ ok: false, error: `bad command: ${e.message}`, code: null });
    continue;
  }
  if (cmd?.op === 'close') {
    await closeClient();
    await out({ ok: true });
    process.exit(0);
  }
  let reply;
  try {
    reply = await handle(cmd);
  } catch (e) {
    reply = errorLine(e);
  }
  await out(reply);
}
// stdin EOF
await closeClient();
process.exit(0);
