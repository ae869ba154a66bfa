// An MCP server that authorizes with OAuth as MCP's authorization spec describes it:
// npm's oidc-provider (a certified OpenID provider) is the authorization server, and
// the official SDK's Streamable HTTP server, behind the SDK's `requireBearerAuth`,
// is the resource. The server publishes its protected-resource metadata (RFC 9728)
// naming the provider; the provider issues opaque access tokens for that resource
// only (RFC 8707): to one client by `client_credentials`, and to clients that register
// themselves (RFC 7591) by a person's `authorization_code` with PKCE, with refresh
// tokens that rotate. The person is automatic: every login and consent is given at
// once (`/interaction/…`), as the account the browser's `account` cookie names (a
// cookie is sent to every port of its host), else `person`.
//   OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET   the client (default `seam-jobs` / `jobs-secret`)
//   OAUTH_TOKEN_TTL                        an access token's life in seconds (default 3600)
//   OAUTH_LIST_SCOPE                       a scope `tools/list` needs too (default none)
// Prints one line, `{"mcp": URL, "issuer": URL}`, once both listen on 127.0.0.1.
// Tools: `whoami` answers with the caller (the client's id, or the person's account)
// and how many distinct tokens the server has been sent; `scopes` the scopes of the
// caller's token; `admin` needs the scope `admin`, which the server asks for (a
// step-up); `revoke` revokes the token it was
// called with and every grant a person gave, with its tokens, as an administrator would.
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

const grants = new Set();
const provider = new Provider(issuer, {
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
  ttl: { AccessToken: ttl, ClientCredentials: ttl, RefreshToken: 3600, Grant: 3600, Interaction: 600, Session: 3600 },
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
    // A registered confidential client a person logs in through (seam's loopback on any port).
    {
      client_id: 'seam-docs',
      client_secret: 'docs-secret',
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: ['http://127.0.0.1/callback'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  scopes: ['mcp', 'admin', 'offline_access'],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: 'mcp admin', audience: resource, accessTokenTTL: ttl, accessTokenFormat: 'opaque' };
      },
    },
  },
});
provider.proxy = false;
const callback = provider.callback();
// The person: every interaction is a login as `person` and a consent to what is asked.
providerHandler = async (req, res) => {
  if (!req.url.startsWith('/interaction/')) return callback(req, res);
  try {
    const details = await provider.interactionDetails(req, res);
    const account = /(?:^|;\s*)account=([A-Za-z0-9_-]+)/.exec(req.headers.cookie ?? '')?.[1] ?? 'person';
    const grant = new provider.Grant({ accountId: account, clientId: details.params.client_id });
    const scopes = String(details.params.scope ?? '').split(' ').filter(Boolean);
    grant.addOIDCScope(scopes.join(' '));
    grant.addResourceScope(resource, scopes.includes('admin') ? 'mcp admin' : 'mcp');
    const grantId = await grant.save();
    grants.add(grantId);
    await provider.interactionFinished(req, res, { login: { accountId: account }, consent: { grantId } }, { mergeWithLastSubmission: false });
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
};

const seen = new Set();
const verifier = {
  async verifyAccessToken(token) {
    const found = (await provider.AccessToken.find(token)) ?? (await provider.ClientCredentials.find(token));
    if (!found) throw new InvalidTokenError('unknown or expired token');
    seen.add(token);
    const caller = found.accountId ?? found.clientId;
    return { token, clientId: caller, scopes: (found.scope ?? '').split(' ').filter(Boolean), expiresAt: found.exp, resource: new URL(found.aud) };
  },
};

const app = express();
app.use(express.json());
const metadata = `${base}/.well-known/oauth-protected-resource/mcp`;
app.get('/.well-known/oauth-protected-resource/mcp', (req, res) => {
  res.json({ resource, authorization_servers: [issuer], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
});
// `admin` is called only with a token that has the scope `admin` (and `tools/list`
// asked only with OAUTH_LIST_SCOPE's, when it is set): without it, the server asks for
// it alone (a 403 `insufficient_scope`, MCP's step-up), so that a client that asks for
// it alone loses the scopes it had (SEP-2350 asks for the union).
const listScope = process.env.OAUTH_LIST_SCOPE;
const scopeNeeded = ({ method, params } = {}) => {
  if (method === 'tools/call' && params?.name === 'admin') return 'admin';
  return method === 'tools/list' ? listScope : undefined;
};
const admin = (req, res, next) => {
  const scope = scopeNeeded(req.body);
  if (!scope || req.auth.scopes.includes(scope)) return next();
  res.set('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${metadata}"`);
  res.status(403).json({ error: 'insufficient_scope', error_description: `${req.body.method} needs the scope ${scope}` });
};
app.post('/mcp', requireBearerAuth({ verifier, resourceMetadataUrl: metadata, expectedResource: new URL(resource) }), admin, async (req, res) => {
  const server = new McpServer({ name: 'oauth-server', version: '0.1.0' });
  server.registerTool('whoami', { description: 'Says which client called, and how many tokens the server was sent' }, async (extra) => ({
    content: [{ type: 'text', text: `client ${extra.authInfo?.clientId}; tokens ${seen.size}` }],
  }));
  server.registerTool('scopes', { description: "Says the scopes of the caller's token" }, async (extra) => ({
    content: [{ type: 'text', text: [...extra.authInfo.scopes].sort().join(' ') }],
  }));
  server.registerTool('admin', { description: 'Answers only a token with the scope admin' }, async () => ({
    content: [{ type: 'text', text: 'admin' }],
  }));
  server.registerTool('revoke', { description: 'Revokes the token it is called with, and every grant a person gave' }, async (extra) => {
    await (await provider.ClientCredentials.find(extra.authInfo.token))?.destroy();
    for (const grantId of grants) {
      await provider.AccessToken.revokeByGrantId(grantId);
      await provider.RefreshToken.revokeByGrantId(grantId);
      await (await provider.Grant.find(grantId))?.destroy();
    }
    grants.clear();
    return { content: [{ type: 'text', text: 'revoked' }] };
  });
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
