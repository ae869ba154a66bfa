// An MCP server that authorizes with OAuth as MCP's authorization spec describes it:
// npm's oidc-provider (a certified OpenID provider) is the authorization server, and
// the official SDK's Streamable HTTP server, behind the SDK's `requireBearerAuth`,
// is the resource. The server publishes its protected-resource metadata (RFC 9728)
// naming the provider; the provider issues opaque access tokens for that resource
// only (RFC 8707) to one client by `client_credentials`.
//   OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET   the client (default `seam-jobs` / `jobs-secret`)
//   OAUTH_TOKEN_TTL                        an access token's life in seconds (default 3600)
// Prints one line, `{"mcp": URL, "issuer": URL}`, once both listen on 127.0.0.1.
// Its tool `whoami` answers with the calling client's id and how many distinct
// tokens the server has been sent.
import http from 'node:http';

const peers = new URL('../../.cache/peers/node_modules/', import.meta.url);
const sdk = new URL('@modelcontextprotocol/sdk/dist/esm/', peers);
const { McpServer } = await import(new URL('server/mcp.js', sdk));
const { StreamableHTTPServerTransport } = await import(new URL('server/streamableHttp.js', sdk));
const { requireBearerAuth } = await import(new URL('server/auth/middleware/bearerAuth.js', sdk));
const { InvalidTokenError } = await import(new URL('server/auth/errors.js', sdk));
const express = (await import(new URL('express/index.js', peers))).default;
const { default: Provider, errors } = await import(new URL('oidc-provider/lib/index.js', peers));

const clientId = process.env.OAUTH_CLIENT_ID ?? 'seam-jobs';
const clientSecret = process.env.OAUTH_CLIENT_SECRET ?? 'jobs-secret';
const ttl = Number(process.env.OAUTH_TOKEN_TTL ?? 3600);

const listen = (handler) =>
  new Promise((resolve) => {
    const server = http.createServer(handler);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });

// The provider's issuer is its address: listen first, then hand the socket its handler.
let providerHandler = (req, res) => res.writeHead(503).end();
const providerServer = await listen((req, res) => providerHandler(req, res));
const issuer = `http://127.0.0.1:${providerServer.address().port}`;
let resourceHandler = (req, res) => res.writeHead(503).end();
const resourceServer = await listen((req, res) => resourceHandler(req, res));
const base = `http://127.0.0.1:${resourceServer.address().port}`;
const resource = `${base}/mcp`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  scopes: ['mcp'],
  features: {
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: 'mcp', audience: resource, accessTokenTTL: ttl, accessTokenFormat: 'opaque' };
      },
    },
  },
});
provider.proxy = false;
providerHandler = provider.callback();

const seen = new Set();
const verifier = {
  async verifyAccessToken(token) {
    const found = await provider.ClientCredentials.find(token);
    if (!found) throw new InvalidTokenError('unknown or expired token');
    seen.add(token);
    return { token, clientId: found.clientId, scopes: (found.scope ?? '').split(' ').filter(Boolean), expiresAt: found.exp, resource: new URL(found.aud) };
  },
};

const app = express();
app.use(express.json());
const metadata = `${base}/.well-known/oauth-protected-resource/mcp`;
app.get('/.well-known/oauth-protected-resource/mcp', (req, res) => {
  res.json({ resource, authorization_servers: [issuer], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
});
app.post('/mcp', requireBearerAuth({ verifier, resourceMetadataUrl: metadata, expectedResource: new URL(resource) }), async (req, res) => {
  const server = new McpServer({ name: 'oauth-server', version: '0.1.0' });
  server.registerTool('whoami', { description: 'Says which client called, and how many tokens the server was sent' }, async (extra) => ({
    content: [{ type: 'text', text: `client ${extra.authInfo?.clientId}; tokens ${seen.size}` }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.all('/mcp', (req, res) => res.status(405).set('Allow', 'POST').end());
resourceHandler = app;

console.log(JSON.stringify({ mcp: resource, issuer }));
