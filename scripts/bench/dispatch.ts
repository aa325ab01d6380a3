import { performance } from 'node:perf_hooks';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { createWebhookHttpClient } from '../../src/webhooks/httpClient.js';
import { buildDeliveryHeaders } from '../../src/webhooks/signature.js';
import { benchConfig } from './config.js';
import { BENCH_SECRET, createBenchDb, insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { startBenchReceiver } from './receiver.js';
import { result, type BenchResult } from './types.js';

/**
 * Deliveries/s of the real dispatcher draining a pre-filled outbox (claim, sign, POST, settle +
 * attempt log), for at most `maxMs`: deliveries settled as delivered / elapsed time.
 */
export async function measureDispatcher(count: number, maxMs: number): Promise<{ perSecond: number; perHost: number; delivered: number }> {
  const bdb = await createBenchDb();
  const receiver = await startBenchReceiver();
  try {
    const config = benchConfig(bdb.dir, bdb.secretKey);
    const launchId = await insertBenchLaunch(bdb.db, bdb.box, receiver.url);
    await prefillOutbox(bdb.db, launchId, receiver.url, count);
    const engine = createWebhookEngine({ db: bdb.db, clock: systemClock, logger: silentLogger(), config, secretBox: bdb.box });
    const started = performance.now();
    engine.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([receiver.waitFor(count), new Promise((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
    await engine.stop(); // waits for the attempts in flight to be settled and logged
    const seconds = (performance.now() - started) / 1000;
    const delivered = Number((await bdb.db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n);
    const logged = Number((await bdb.db.selectFrom('delivery_attempts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    if (delivered === 0 || logged < delivered) throw new Error(`dispatch bench: ${delivered} delivered, ${logged} attempts logged`);
    return { perSecond: delivered / seconds, perHost: config.webhooks.maxInFlightPerHost, delivered };
  } finally {
    await receiver.close();
    await bdb.close();
  }
}

/** Raw signed POSTs of the same bodies with the same undici client and the same concurrency, no database. */
export async function measureRawPosts(count: number, concurrency: number): Promise<number> {
  const receiver = await startBenchReceiver();
  const client = createWebhookHttpClient({ timeoutMs: 10_000, guard: false });
  try {
    const body = JSON.stringify({ id: 'evt_bench', event: 'launch.step_complete', timestamp: new Date().toISOString(), launchId: 'lch_bench', sequence: 1, data: { step: 'create_mint', index: 0, total: 3, transactions: [] } });
    let next = 0;
    const started = performance.now();
    const worker = async () => {
      while (next < count) {
        const i = next++;
        const headers = buildDeliveryHeaders({ secrets: [BENCH_SECRET], body, event: 'launch.step_complete', eventId: `evt_${i}`, attempt: 1, requestId: 'req_bench', timestampSeconds: Math.floor(Date.now() / 1000) });
        const outcome = await client.send({ url: receiver.url, body, headers });
        if (!outcome.ok) throw new Error(`raw POST failed: ${outcome.errorClass ?? outcome.statusCode}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return count / ((performance.now() - started) / 1000);
  } finally {
    await client.close();
    await receiver.close();
  }
}

/** `dispatch`: the dispatcher against raw POSTs, alternated twice, best of each. */
export async function benchDispatch(count = 5000, maxMs = 8000): Promise<{ result: BenchResult; note: string }> {
  let best = 0;
  let raw = 0;
  let perHost = 0;
  let delivered = 0;
  for (let round = 0; round < 2; round++) {
    const d = await measureDispatcher(count, maxMs);
    if (d.perSecond > best) ({ perSecond: best, delivered } = d);
    perHost = d.perHost;
    raw = Math.max(raw, await measureRawPosts(count, perHost));
  }
  return {
    result: result('dispatch', best, 'deliveries/s', raw),
    note: `backlog ${count} events to one host, ${delivered} delivered in ≤${maxMs / 1000} s; per-host cap ${perHost} = raw concurrency`,
  };
}
