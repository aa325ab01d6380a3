/**
 * Forwards the owner's events to a local URL while you build a receiver (README, "Forward events to
 * your machine"):
 *
 *   npm run listen -- --forward-to http://localhost:3000/hooks [--events 'launch.*'] [--key sk_...] [--from now]
 *   npm run listen -- --print-secret
 *
 * Environment: LAUNCH_API_KEY (instead of --key; scope launches:read), LAUNCH_SERVICE_URL (default:
 * the running development service's, from DATA_DIR/local.json, else http://127.0.0.1:8080),
 * LAUNCH_LISTEN_SECRET (a local signing secret of your own; otherwise the one kept in listen.json,
 * see src/listen/listenState.ts for where). The kept file also holds where each stream stopped, so a
 * restart forwards what was emitted while it was down; `--from now` skips that.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readLocalEndpoints } from '../src/chain/embedded/localCluster.js';
import { listen, ListenRefused } from '../src/listen/listen.js';
import { listenStatePath, loadOrCreateSecret, readCursor, saveCursor, streamKey } from '../src/listen/listenState.js';

const USAGE = "usage: npm run listen -- --forward-to <url> [--events 'launch.*'] [--key sk_...] [--from now]\n       npm run listen -- --print-secret";

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let values;
try {
  ({ values } = parseArgs({ options: { 'forward-to': { type: 'string' }, events: { type: 'string' }, key: { type: 'string' }, from: { type: 'string' }, 'print-secret': { type: 'boolean' }, help: { type: 'boolean' } }, strict: true }));
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const statePath = listenStatePath(process.env);
const ownSecret = process.env.LAUNCH_LISTEN_SECRET || undefined;
// Both schemes sign with it, and Standard Webhooks' keys are the base64 after whsec_ (README "Forward events to your machine").
if (ownSecret !== undefined && !/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(ownSecret)) {
  fail('LAUNCH_LISTEN_SECRET must be whsec_ followed by base64 (at least 16 characters), as the secrets listen makes: e.g. whsec_$(openssl rand -base64 24)');
}
let kept: { secret: string; created: boolean };
try {
  kept = ownSecret ? { secret: ownSecret, created: false } : loadOrCreateSecret(statePath);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
if (values['print-secret']) {
  process.stdout.write(`${kept.secret}\n`);
  process.exit(0);
}
if (values.from !== undefined && values.from !== 'now') fail(`--from takes only "now" (skip the events emitted while listen was not running), got "${values.from}"`);
const forwardTo = values['forward-to'] ?? fail(`--forward-to is required\n${USAGE}`);
if (!URL.canParse(forwardTo) || !/^https?:$/.test(new URL(forwardTo).protocol)) fail(`--forward-to must be an http(s) URL, got "${forwardTo}"`);
const apiKey = values.key || process.env.LAUNCH_API_KEY || fail(`an API key is required: --key sk_... or LAUNCH_API_KEY\n${USAGE}`);
const serviceUrl = process.env.LAUNCH_SERVICE_URL || readLocalEndpoints(resolve(process.env.DATA_DIR || './data'))?.serviceUrl || 'http://127.0.0.1:8080';
if (!URL.canParse(serviceUrl)) fail(`LAUNCH_SERVICE_URL must be a URL, got "${serviceUrl}"`);

const stop = new AbortController();
process.on('SIGINT', () => stop.abort());
process.on('SIGTERM', () => stop.abort());
const key = streamKey({ serviceUrl, apiKey, events: values.events, forwardTo });
const secretNote = ownSecret
  ? 'Signing with LAUNCH_LISTEN_SECRET (X-Service-Signature and webhook-signature are both signed with it)'
  : kept.created
    ? `Your local webhook signing secret is ${kept.secret} (X-Service-Signature and webhook-signature are both signed with it; kept in ${statePath} for the next runs)`
    : `Signing with your local webhook signing secret kept in ${statePath}, the same as before (npm run listen -- --print-secret shows it)`;
let startAfter: string | undefined;
try {
  startAfter = values.from === 'now' ? undefined : readCursor(statePath, key);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
const onPosition = (eventId: string | undefined) => {
  try {
    saveCursor(statePath, key, eventId);
  } catch (error) {
    process.stderr.write(`could not keep the stream's place in ${statePath}: ${error instanceof Error ? error.message : String(error)}\n`);
  }
};
listen({ serviceUrl, apiKey, forwardTo, events: values.events, secret: kept.secret, secretNote, startAfter, onPosition, signal: stop.signal, print: (line) => process.stdout.write(`${line}\n`) })
  .then(() => {
    process.stdout.write('Stopped.\n');
    process.exit(0);
  })
  .catch((error: unknown) => fail(error instanceof ListenRefused ? error.message : `listen failed: ${error instanceof Error ? error.message : String(error)}`));
