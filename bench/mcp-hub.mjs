// mcp-hub 4.2.1 as a benchmark peer, offline and loopback-only: shared by
// bench/gateway.mjs and bench/reload.mjs so both run it the same way.
//
// mcp-hub fetches its marketplace catalog on start unless
// $XDG_DATA_HOME/mcp-hub/cache/registry.json holds a non-empty
// `registry.servers` with `lastFetchedAt` younger than its 1 h TTL, so it runs
// with HOME and XDG_* in a fresh folder where such a cache is placed first.
// It runs under `strace -f -e trace=connect` (seccomp-filtered: only connect()
// stops), and `checkLoopbackOnly` fails the run if it or any child connected
// anywhere but loopback or a Unix socket.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const MCP_HUB = path.join(root, '.cache/bench/npm/node_modules/mcp-hub/dist/cli.js');

/// HOME and XDG_* under `dir` (emptied first), with the offline marketplace cache.
export function mcpHubHome(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  const env = {
    HOME: dir, XDG_CONFIG_HOME: path.join(dir, '.config'), XDG_DATA_HOME: path.join(dir, '.local/share'),
    XDG_STATE_HOME: path.join(dir, '.local/state'), XDG_CACHE_HOME: path.join(dir, '.cache'),
  };
  for (const d of Object.values(env)) fs.mkdirSync(d, { recursive: true });
  const cacheDir = path.join(env.XDG_DATA_HOME, 'mcp-hub/cache');
  fs.mkdirSync(cacheDir, { recursive: true });
  fs.writeFileSync(path.join(cacheDir, 'registry.json'), JSON.stringify({
    registry: {
      version: 'bench-offline', generatedAt: Date.now(), totalServers: 1,
      servers: [{ id: 'bench-placeholder', name: 'bench placeholder', description: 'offline placeholder', tags: [], category: 'other', url: 'http://127.0.0.1/', stars: 0, lastCommit: 0 }],
    },
    lastFetchedAt: Date.now(),
    serverDocumentation: {},
  }));
  return env;
}

/// The command line: strace around node around mcp-hub.
export function mcpHubCommand({ port, config, straceLog, watch = false }) {
  return ['strace', [
    '-f', '--seccomp-bpf', '-e', 'trace=connect', '-o', straceLog,
    process.execPath, MCP_HUB, '--port', String(port), '--config', config, ...(watch ? ['--watch'] : []),
  ]];
}

/// True once mcp-hub reports `ready` with every server in `names` connected.
export async function mcpHubReady(port, names) {
  const r = await fetch(`http://127.0.0.1:${port}/api/health`).catch(() => null);
  if (!r?.ok) return false;
  const h = await r.json();
  const connected = new Set((h.servers ?? []).filter((s) => s.status === 'connected').map((s) => s.name));
  return h.state === 'ready' && names.every((n) => connected.has(n));
}

/// Throws if the strace log shows a connect() to anything but loopback.
export function checkLoopbackOnly(straceLog) {
  const text = fs.readFileSync(straceLog, 'utf8');
  const bad = [];
  let inet = 0;
  for (const line of text.split('\n')) {
    if (!line.includes('connect(')) continue;
    const v4 = line.match(/sa_family=AF_INET,.*inet_addr\("([^"]+)"\)/);
    const v6 = line.match(/sa_family=AF_INET6,.*inet_pton\(AF_INET6, "([^"]+)"/);
    if (v4) { inet++; if (!v4[1].startsWith('127.')) bad.push(line); }
    if (v6) { inet++; if (v6[1] !== '::1' && !/^::ffff:127\./.test(v6[1])) bad.push(line); }
  }
  if (bad.length) throw new Error(`non-loopback connect() in ${straceLog}:\n${bad.join('\n')}`);
  return `strace: ${inet} inet connect() calls, all loopback`;
}
