/**
 * Forwards the owner's events to a local URL while you build a receiver (README, "Forward events to
 * your machine"):
 *
 *   npm run listen -- --forward-to http://localhost:3000/hooks [--events 'launch.*'] [--key sk_...]
 *
 * Environment: LAUNCH_API_KEY (instead of --key; scope launches:read), LAUNCH_SERVICE_URL (default:
 * the running development service's, from DATA_DIR/local.json, else http://127.0.0.1:8080), LAUNCH_LISTEN_SECRET (the local signing secret; a new one each run otherwise).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readLocalEndpoints } from '../src/chain/embedded/localCluster.js';
import { listen, ListenRefused } from '../src/listen/listen.js';

const USAGE = "usage: npm run listen -- --forward-to <url> [--events 'launch.*'] [--key sk_...]";

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let values;
try {
  ({ values } = parseArgs({ options: { 'forward-to': { type: 'string' }, events: { type: 'string' }, key: { type: 'string' }, help: { type: 'boolean' } }, strict: true }));
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const forwardTo = values['forward-to'] ?? fail(`--forward-to is required\n${USAGE}`);
if (!URL.canParse(forwardTo) || !/^https?:$/.test(new URL(forwardTo).protocol)) fail(`--forward-to must be an http(s) URL, got "${forwardTo}"`);
const apiKey = values.key || process.env.LAUNCH_API_KEY || fail(`an API key is required: --key sk_... or LAUNCH_API_KEY\n${USAGE}`);
const serviceUrl = process.env.LAUNCH_SERVICE_URL || readLocalEndpoints(resolve(process.env.DATA_DIR || './data'))?.serviceUrl || 'http://127.0.0.1:8080';
if (!URL.canParse(serviceUrl)) fail(`LAUNCH_SERVICE_URL must be a URL, got "${serviceUrl}"`);

const stop = new AbortController();
process.on('SIGINT', () => stop.abort());
process.on('SIGTERM', () => stop.abort());
listen({ serviceUrl, apiKey, forwardTo, events: values.events, secret: process.env.LAUNCH_LISTEN_SECRET || undefined, signal: stop.signal, print: (line) => process.stdout.write(`${line}\n`) })
  .then(() => {
    process.stdout.write('Stopped.\n');
    process.exit(0);
  })
  .catch((error: unknown) => fail(error instanceof ListenRefused ? error.message : `listen failed: ${error instanceof Error ? error.message : String(error)}`));
