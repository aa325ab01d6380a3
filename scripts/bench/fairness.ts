import { performance } from 'node:perf_hooks';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { recordEvent } from '../../src/webhooks/outbox.js';
import { benchConfig } from './config.js';
import { createBenchDb, insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { startBenchReceiver } from './receiver.js';
import { percentile, result, type BenchResult } from './types.js';

/**
 * Commit → receipt latencies (ms) of owner B's events, committed one every `everyMs` for `count`
 * events, with the real dispatcher (default caps) running; with `load`, owner A first has a backlog
 * to `load.hosts` receivers that each answer 200 after `load.slowMs` (slow, never failing, so no
 * breaker opens), and B starts once A's first answers came back and A's slots are busy.
 */
async function ownerBLatencies(count: number, everyMs: number, load?: { hosts: number; each: number; slowMs: number }): Promise<{ latencies: number[]; aSent: number }> {
  const bdb = await createBenchDb();
  const fast = await startBenchReceiver({ record: true });
  const slow = await Promise.all(Array.from({ length: load?.hosts ?? 0 }, () => startBenchReceiver({ delayMs: load?.slowMs })));
  try {
    for (const r of slow) await prefillOutbox(bdb.db, await insertBenchLaunch(bdb.db, bdb.box, r.url, Date.now(), 'owner-a'), r.url, load!.each, Date.now(), 'owner-a');
    const bLaunch = await insertBenchLaunch(bdb.db, bdb.box, fast.url, Date.now(), 'owner-b');
    const engine = createWebhookEngine({ db: bdb.db, clock: systemClock, logger: silentLogger(), config: benchConfig(bdb.dir, bdb.secretKey), secretBox: bdb.box });
    engine.start();
    if (load) await new Promise((resolve) => setTimeout(resolve, load.slowMs + 500));
    const committed = new Map<string, number>();
    for (let i = 0; i < count; i++) {
      const recorded = await bdb.db.transaction().execute((trx) => recordEvent(trx, systemClock, { launchId: bLaunch, event: 'launch.complete', data: { index: i }, requestId: 'req_bench' }));
      committed.set(recorded.eventId, performance.now());
      engine.signal.notify();
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    const deadline = Date.now() + 30_000;
    while (fast.firstSeen.size < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const cutoff = performance.now();
    const aSent = slow.reduce((n, r) => n + r.count, 0);
    await engine.stop();
    return { latencies: [...committed].map(([id, at]) => (fast.firstSeen.get(id) ?? cutoff) - at), aSent };
  } finally {
    await Promise.all([fast, ...slow].map((r) => r.close()));
    await bdb.close();
  }
}

/**
 * `fair-share`: owner B's event latency (p50, p99) while owner A keeps every slot it may use busy
 * with 12 receivers that answer 200 after 3 s (a backlog of 40 each), against B's latency alone.
 */
export async function benchFairness(count = 20, everyMs = 250): Promise<{ results: BenchResult[]; note: string }> {
  const load = { hosts: 12, each: 40, slowMs: 3_000 };
  const alone = await ownerBLatencies(count, everyMs);
  const loaded = await ownerBLatencies(count, everyMs, load);
  return {
    results: [
      result('fair-share-b-p50', percentile(loaded.latencies, 50), 'ms', percentile(alone.latencies, 50)),
      result('fair-share-b-p99', percentile(loaded.latencies, 99), 'ms', percentile(alone.latencies, 99)),
    ],
    note: `owner B: ${count} events ${everyMs} ms apart; owner A: ${load.hosts} receivers answering 200 after ${load.slowMs / 1000} s, ${load.each} deliveries each, ${loaded.aSent} of A's attempts sent meanwhile; default caps (64 in flight, 48 per owner, 8 per host); baseline: B alone`,
  };
}
