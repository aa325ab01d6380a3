/**
 * An example webhook receiver: verifies every delivery with `verifyWebhook`, answers 2xx at once,
 * processes asynchronously, and processes each event id once.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=4000 npx tsx scripts/example-receiver.ts
 *
 * In a real system keep the processed ids in your database (a unique constraint on the event id,
 * inserted in the same transaction as the effect); the in-memory set here is for illustration.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
// In your own project: `import { verifyWebhook, WebhookVerificationError } from '@launch-service/webhooks';`
import { verifyWebhook, WebhookVerificationError } from '../packages/webhooks/src/index.js';

export interface ReceivedEvent {
  id: string;
  event: string;
  timestamp: string;
  launchId: string;
  sequence: number;
  data: unknown;
}

export interface ExampleReceiverOptions {
  secret: string;
  /** Your processing; runs after the 2xx has been sent. */
  onEvent(event: ReceivedEvent): Promise<void> | void;
  /** Told when a delivery repeats an event already processed (a retry or redelivery); it is skipped. */
  onDuplicate?(event: ReceivedEvent): void;
  /** How many recent event ids to remember for de-duplication. */
  rememberIds?: number;
}

/** One line per event: sequence, type, and what it is about (the step, the mint, the error). */
export function describeEvent(e: ReceivedEvent): string {
  const data = (e.data ?? {}) as Record<string, unknown>;
  const error = (data.error ?? {}) as Record<string, unknown>;
  const detail =
    e.event === 'launch.step_complete'
      ? `${String(data.step)} (${String(data.index)}/${String(data.total)})`
      : e.event === 'launch.complete'
        ? `mint ${String(data.mint)}`
        : e.event === 'launch.failed'
          ? `${String(error.step)}: ${String(error.code)}`
          : '';
  return `#${e.sequence} ${e.event}${detail ? ` ${detail}` : ''}  launch=${e.launchId} id=${e.id}`;
}

const MAX_BODY_BYTES = 1024 * 1024;

function readRawBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('body too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A node:http server that verifies, acknowledges, dedupes on `id`, then processes in the background. */
export function createExampleReceiver(options: ExampleReceiverOptions): Server {
  const seen = new Set<string>();
  const remember = options.rememberIds ?? 10_000;
  let queue: Promise<void> = Promise.resolve();

  return createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    readRawBody(req).then(
      (raw) => {
        let event: ReceivedEvent;
        try {
          // The raw bytes, not re-serialized JSON: the signature covers exactly what was sent.
          event = verifyWebhook<ReceivedEvent>(raw, req.headers, options.secret, { toleranceSeconds: 300 }).payload;
        } catch (error) {
          const reason = error instanceof WebhookVerificationError ? error.reason : 'invalid';
          return void res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: reason }));
        }
        // Acknowledge first: the sender times out after 10 s and retries anything that is not 2xx.
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
        if (seen.has(event.id)) return void options.onDuplicate?.(event); // a retry or redelivery of something already handled
        seen.add(event.id);
        if (seen.size > remember) seen.delete(seen.values().next().value as string);
        queue = queue
          .then(() => options.onEvent(event))
          .catch((error: unknown) => {
            // Our own processing failed after we acknowledged: forget the id so a redelivery is processed.
            seen.delete(event.id);
            console.error(`processing ${event.id} failed`, error);
          });
      },
      () => void res.writeHead(413).end(),
    );
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    console.error('Set WEBHOOK_SECRET to the webhookSecret of your launch');
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 4000);
  createExampleReceiver({
    secret,
    onEvent: (e) => console.log(describeEvent(e)),
    onDuplicate: (e) => console.log(`#${e.sequence} ${e.event} again (id=${e.id}): already processed, skipped`),
  }).listen(port, () => console.log(`listening on http://localhost:${port}/`));
}
