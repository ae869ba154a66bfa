// A stdio MCP server with an MCP Apps view, built on the official SDK's
// low-level Server: it declares the `io.modelcontextprotocol/ui` extension,
// its `clock` tool names the view `ui://clock/app.html` in `_meta.ui`, and the
// view is readable but, as servers may, not listed by `resources/list`. Its
// `consent` tool asks the client to open a URL (a URL elicitation) and, once
// accepted, says the elicitation is complete (`notifications/elicitation/complete`);
// its `gated` tool refuses with "URL elicitation required" (-32042). Its
// `confirm` prompt asks the client who is there (a form elicitation) while it
// answers `prompts/get`, and names them in the prompt.
const sdk = new URL('../../.cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Server } = await import(new URL('server/index.js', sdk));
const { StdioServerTransport } = await import(new URL('server/stdio.js', sdk));
const {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  ListResourcesRequestSchema,
  ReadResourceRequestSchema,
  ListPromptsRequestSchema,
  GetPromptRequestSchema,
  ElicitResultSchema,
  McpError,
  ErrorCode,
  UrlElicitationRequiredError,
} = await import(new URL('types.js', sdk));

const VIEW = 'ui://clock/app.html';
const server = new Server(
  { name: 'apps-server', version: '0.1.0' },
  { capabilities: { tools: {}, resources: {}, prompts: {}, extensions: {
    'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] },
    // Declared so that a test sees seam withhold an extension whose messages it does not carry.
    'com.example/unrouted': {},
  } } },
);
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: 'clock', description: 'Shows a clock', inputSchema: { type: 'object' }, _meta: { ui: { resourceUri: VIEW } } },
    { name: 'consent', description: 'Asks for consent in a browser', inputSchema: { type: 'object' } },
    { name: 'gated', description: 'Refuses until the user has consented in a browser (-32042)', inputSchema: { type: 'object' } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === 'gated') {
    throw new UrlElicitationRequiredError([{ mode: 'url', elicitationId: 'gate-1', url: 'https://example.com/gate', message: 'Open this first' }]);
  }
  if (request.params.name !== 'consent') return { content: [{ type: 'text', text: 'tick' }] };
  const elicitationId = 'consent-1';
  const answer = await server.elicitInput({ mode: 'url', url: 'https://example.com/consent', message: 'Consent, please', elicitationId });
  if (answer.action === 'accept') await server.createElicitationCompletionNotifier(elicitationId)();
  return { content: [{ type: 'text', text: `consent: ${answer.action}` }] };
});
server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [] }));
server.setRequestHandler(ReadResourceRequestSchema, (request) => {
  if (request.params.uri !== VIEW) throw new McpError(ErrorCode.InvalidParams, `no resource ${request.params.uri}`);
  return { contents: [{ uri: VIEW, mimeType: 'text/html;profile=mcp-app', text: '<html><body>clock</body></html>' }] };
});
server.setRequestHandler(ListPromptsRequestSchema, () => ({
  prompts: [{ name: 'confirm', description: 'Asks the client who is there before it answers' }],
}));
server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
  const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
  const answer = await extra.sendRequest(
    { method: 'elicitation/create', params: { mode: 'form', message: 'Who is there?', requestedSchema: schema } },
    ElicitResultSchema,
  );
  return { messages: [{ role: 'user', content: { type: 'text', text: `confirmed by ${answer.content?.name ?? answer.action}` } }] };
});
await server.connect(new StdioServerTransport());
