// The peer of `web_fetch`'s conversion: turndown (the converter htmd follows),
// HTML on stdin → Markdown on stdout, with script/style/noscript dropped as seam does.
import { createRequire } from 'node:module';
const require = createRequire(new URL(`file://${process.env.NPM_PREFIX}/node_modules/`));
const TurndownService = require('turndown');
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const service = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
service.remove(['script', 'style', 'noscript']);
process.stdout.write(service.turndown(Buffer.concat(chunks).toString('utf8')));
