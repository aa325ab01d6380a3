/**
 * Child process of the `postgres` benchmark's peer row: graphile-worker on the PostgreSQL database
 * BENCH_DATABASE_URL (schema `graphile_worker`, migrated by the parent), PEER_CONCURRENCY jobs at a
 * time, with one task doing the dispatcher's per-delivery work: build the envelope, open the
 * endpoint's sealed secret, sign with the service's signing code, POST with the service's
 * keep-alive client, and insert an attempt row (autocommit: durable on return). With PEER_TUNED=1 it
 * runs in the configuration graphile-worker's performance page recommends (a local queue of
 * concurrency + 1 jobs, completions and failures batched with a delay of 0, prepared statements,
 * which are its default); without it, on its defaults. Prints `{"ready": true}` once built, starts on
 * a `go` line on stdin, stops on SIGTERM.
 */
import { createInterface } from 'node:readline';
import { Logger, run, type Runner, type Task } from 'graphile-worker';
import { createSecretBox, withOpenCache } from '../../src/crypto/secretBox.js';
import { newId } from '../../src/lib/ids.js';
import { createWebhookHttpClient } from '../../src/webhooks/httpClient.js';
import { buildDeliveryHeaders } from '../../src/webhooks/signature.js';

interface DeliverPayload {
  id: string;
  event: string;
  timestamp: string;
  launchId: string;
  sequence: number;
  data: unknown;
  url: string;
  sealedSecret: string;
}

const box = withOpenCache(createSecretBox(Buffer.from(process.env.BENCH_SECRET_KEY ?? '', 'base64')));
const client = createWebhookHttpClient({ timeoutMs: 10_000, guard: false });

const deliver: Task = async (raw, helpers) => {
  const p = raw as DeliverPayload;
  const body = JSON.stringify({ id: p.id, event: p.event, timestamp: p.timestamp, launchId: p.launchId, sequence: p.sequence, data: p.data });
  const startedAt = Date.now();
  const attempt = helpers.job.attempts;
  const headers = buildDeliveryHeaders({ secrets: [box.open(p.sealedSecret)], body, event: p.event, eventId: p.id, attempt, requestId: newId('req'), timestampSeconds: Math.floor(startedAt / 1000) });
  const outcome = await client.send({ url: p.url, body, headers });
  await helpers.query(
    'insert into peer_attempts (id, job_id, event_id, attempt, outcome, status_code, duration_ms, started_at) values ($1, $2, $3, $4, $5, $6, $7, $8)',
    [newId('att'), helpers.job.id, p.id, attempt, outcome.ok ? 'success' : 'failure', outcome.statusCode, outcome.durationMs, startedAt],
  );
  if (!outcome.ok) throw new Error(`delivery failed: ${outcome.errorClass ?? outcome.statusCode}`);
};

let runner: Runner | undefined;
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'go' || runner) return;
  const concurrency = Number(process.env.PEER_CONCURRENCY ?? 8);
  const tuned = process.env.PEER_TUNED === '1';
  void run({
    connectionString: process.env.BENCH_DATABASE_URL,
    concurrency,
    maxPoolSize: concurrency + 2,
    ...(tuned ? { preset: { worker: { localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0, preparedStatements: true } } } : {}),
    noHandleSignals: true,
    pollInterval: 1000,
    taskList: { deliver },
    logger: new Logger(() => () => undefined),
  }).then((r) => (runner = r));
});
process.on('SIGTERM', () => {
  void (async () => {
    await runner?.stop();
    await client.close();
    process.exit(0);
  })();
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
