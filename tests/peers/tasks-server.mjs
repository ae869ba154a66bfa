// A stdio MCP server that makes tasks as the 2026-07-28 tasks extension
// (SEP-2663, `io.modelcontextprotocol/tasks`) has them, built on the official
// SDK's low-level Server. The installed SDK (1.32) knows only 2025-11-25's
// experimental tasks, so the SEP-2663 shapes are written here and `tasks/*`
// are answered by the Server's fallback handler.
//   `slow`: called by a client that declares the extension (in the request's
//   `_meta`), it answers with a task; otherwise with its result at once. The
//   task is `working` at its first `tasks/get` and `completed` with the result
//   at the next; `tasks/cancel` cancels it; `tasks/update` is acknowledged.
//   TASKS_ALWAYS=1: `slow` answers with a task whatever the client declared (a
//   server that breaks SEP-2663's rule, for the client's side of it).
const sdk = new URL('../../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Server } = await import(new URL('server/index.js', sdk));
const { StdioServerTransport } = await import(new URL('server/stdio.js', sdk));
const { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode } = await import(new URL('types.js', sdk));

const TASKS = 'io.modelcontextprotocol/tasks';
const server = new Server({ name: 'tasks-server', version: '0.1.0' }, { capabilities: { tools: {}, extensions: { [TASKS]: {} } } });

const declared = (request) => request.params?._meta?.['io.modelcontextprotocol/clientCapabilities']?.extensions?.[TASKS] !== undefined;
const done = (text) => ({ content: [{ type: 'text', text: `done: ${text}` }], isError: false });
const tasks = new Map();
let made = 0;

server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [{ name: 'slow', description: 'Answers with a task when the client can hold one', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
}));

server.setRequestHandler(CallToolRequestSchema, (request) => {
  const text = request.params.arguments?.text ?? '';
  if (!declared(request) && process.env.TASKS_ALWAYS !== '1') return done(text);
  made += 1;
  const now = new Date().toISOString();
  const task = { taskId: `upstream-${made}`, status: 'working', createdAt: now, lastUpdatedAt: now, ttlMs: 60000, pollIntervalMs: 10 };
  tasks.set(task.taskId, { task, text, polls: 0 });
  return { resultType: 'task', ...task };
});

server.fallbackRequestHandler = async (request) => {
  if (!declared(request)) throw new McpError(-32003, `${request.method} needs the tasks extension declared`);
  const held = tasks.get(request.params?.taskId);
  if (!held) throw new McpError(ErrorCode.InvalidParams, `no task ${request.params?.taskId}`);
  switch (request.method) {
    case 'tasks/get':
      held.polls += 1;
      if (held.task.status === 'working' && held.polls > 1) held.task.status = 'completed';
      held.task.lastUpdatedAt = new Date().toISOString();
      return { resultType: 'complete', ...held.task, ...(held.task.status === 'completed' ? { result: done(held.text) } : {}) };
    case 'tasks/cancel':
      if (held.task.status === 'working') held.task.status = 'cancelled';
      return {};
    case 'tasks/update':
      return {};
    default:
      throw new McpError(ErrorCode.MethodNotFound, `no method ${request.method}`);
  }
};

await server.connect(new StdioServerTransport());
