import { performance } from 'node:perf_hooks';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { createWebhookHttpClient } from '../../src/webhooks/httpClient.js';
import { recordEvent } from '../../src/webhooks/outbox.js';
import { buildDeliveryHeaders } from '../../src/webhooks/signature.js';
import { benchConfig } from './config.js';
import { BENCH_SECRET, createBenchDb, insertBenchLaunch } from './fixtures.js';
import { paced } from './pace.js';
import { startBenchReceiver } from './receiver.js';
import { percentile, result, type BenchResult } from './types.js';

/**
 * Commit → receipt latencies (ms) of events committed to the outbox at `rate`/s with the dispatcher
 * running. An event not received within `graceMs` after the last commit counts with its latency at
 * that cut-off (a lower bound), so a dispatcher that falls behind cannot stall the benchmark.
 */
async function measureOutbox(rate: number, durationMs: number, graceMs: number): Promise<{ latencies: number[]; late: number }> {
  const bdb = await createBenchDb();
  const receiver = await startBenchReceiver({ record: true });
  const committed = new Map<string, number>();
  try {
    const launchId = await insertBenchLaunch(bdb.db, bdb.box, receiver.url);
    const engine = createWebhookEngine({ db: bdb.db, clock: systemClock, logger: silentLogger(), config: benchConfig(bdb.dir, bdb.secretKey), secretBox: bdb.box });
    engine.start();
    const total = await paced(rate, durationMs, async (i) => {
      const recorded = await bdb.db.transaction().execute((trx) => recordEvent(trx, systemClock, { launchId, event: 'launch.step_complete', data: { step: 'create_mint', index: i }, requestId: 'req_bench' }));
      committed.set(recorded.eventId, performance.now());
      engine.signal.notify();
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([receiver.waitFor(total), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    const cutoff = performance.now();
    await engine.stop();
    const late = [...committed.keys()].filter((id) => !receiver.firstSeen.has(id)).length;
    return { latencies: [...committed].map(([id, at]) => (receiver.firstSeen.get(id) ?? cutoff) - at), late };
  } finally {
    await receiver.close();
    await bdb.close();
  }
}

/** The same rate of raw signed POSTs with the same client, no database: send → receipt. */
async function measureRaw(rate: number, durationMs: number): Promise<number[]> {
  const receiver = await startBenchReceiver({ record: true });
  const client = createWebhookHttpClient({ timeoutMs: 10_000, guard: false });
  const sentAt = new Map<string, number>();
  try {
    await paced(rate, durationMs, async (i) => {
      const id = `evt_raw_${i}`;
      const body = JSON.stringify({ id, event: 'launch.step_complete', timestamp: new Date().toISOString(), launchId: 'lch_bench', sequence: i + 1, data: { step: 'create_mint', index: i } });
      sentAt.set(id, performance.now());
      const headers = buildDeliveryHeaders({ secret: BENCH_SECRET, body, event: 'launch.step_complete', eventId: id, attempt: 1, requestId: 'req_bench', timestampSeconds: Math.floor(Date.now() / 1000) });
      await client.send({ url: receiver.url, body, headers });
    });
    return [...sentAt].map(([id, at]) => (receiver.firstSeen.get(id) ?? Number.NaN) - at);
  } finally {
    await client.close();
    await receiver.close();
  }
}

/** `delivery-latency-p99` and `-p50`: commit → receipt at a steady rate, vs raw POSTs at that rate. */
export async function benchLatency(rate = 500, durationMs = 8000, graceMs = 5000): Promise<{ results: BenchResult[]; note: string }> {
  const { latencies: outbox, late } = await measureOutbox(rate, durationMs, graceMs);
  const raw = await measureRaw(rate, durationMs);
  return {
    results: [
      result('delivery-latency-p99', percentile(outbox, 99), 'ms', percentile(raw, 99)),
      result('delivery-latency-p50', percentile(outbox, 50), 'ms', percentile(raw, 50)),
    ],
    note: `${outbox.length} events at ${rate}/s, each committed in its own transaction${late ? `; ${late} not received ${graceMs / 1000} s after the last commit (counted at the cut-off: a lower bound)` : ''}; baseline = raw POST send → receipt`,
  };
}
