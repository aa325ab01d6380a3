import { performance } from 'node:perf_hooks';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { createEndpoint } from '../../src/webhooks/endpoints/endpoints.js';
import { recordEvent } from '../../src/webhooks/outbox.js';
import { benchConfig } from './config.js';
import { createBenchDb, insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { startBenchReceiver, type BenchReceiver } from './receiver.js';
import { percentile, result, type BenchResult } from './types.js';

/**
 * Commit → receipt latencies (ms) of owner B's events, committed one every `everyMs` for `count`
 * events, with the real dispatcher (default caps) running; with `load`, owner A first has a backlog
 * to `load.hosts` receivers that each answer 200 after `load.slowMs` (slow, never failing, so no
 * breaker opens), and B starts once A's first answers came back and A's slots are busy.
 */
async function ownerBLatencies(count: number, everyMs: number, load?: Load): Promise<{ latencies: number[]; aSent: number; throttled?: EndpointLoad; ordered?: EndpointLoad }> {
  const bdb = await createBenchDb();
  const fast = await startBenchReceiver({ record: true });
  const slow = await Promise.all(Array.from({ length: load?.hosts ?? 0 }, () => startBenchReceiver({ delayMs: load?.slowMs })));
  const throttledReceiver = load ? await startBenchReceiver({ record: true }) : undefined;
  const orderedReceiver = load ? await startBenchReceiver({ record: true, delayMs: load.ordered.answerMs }) : undefined;
  const beside: Array<{ receiver: BenchReceiver; events: Map<string, { launch: string; sequence: number }> }> = [];
  try {
    for (const r of slow) await prefillOutbox(bdb.db, await insertBenchLaunch(bdb.db, bdb.box, r.url, Date.now(), 'owner-a'), r.url, load!.each, Date.now(), 'owner-a');
    if (load && throttledReceiver && orderedReceiver) {
      // Beside A's slow receivers, A's throttled endpoint with a backlog, and A's ordered endpoint with
      // several launches' events each waiting for the one before.
      const deps = { db: bdb.db, clock: systemClock, secretBox: bdb.box };
      const throttled = await createEndpoint(deps, 'owner-a', { url: throttledReceiver.url, events: ['*'], description: null, signatureScheme: 'service', rateLimitPerSecond: load.throttled.rate });
      const ordered = await createEndpoint(deps, 'owner-a', { url: orderedReceiver.url, events: ['*'], description: null, signatureScheme: 'service', ordering: 'launch' });
      const events = new Map<string, { launch: string; sequence: number }>();
      const launch = await insertBenchLaunch(bdb.db, bdb.box, throttledReceiver.url, Date.now(), 'owner-a');
      (await prefillOutbox(bdb.db, launch, throttledReceiver.url, load.throttled.backlog, Date.now(), 'owner-a', throttled.endpoint.id)).forEach((id, i) => events.set(id, { launch, sequence: i + 1 }));
      beside.push({ receiver: throttledReceiver, events });
      const orderedEvents = new Map<string, { launch: string; sequence: number }>();
      for (let l = 0; l < load.ordered.launches; l++) {
        const id = await insertBenchLaunch(bdb.db, bdb.box, orderedReceiver.url, Date.now(), 'owner-a');
        (await prefillOutbox(bdb.db, id, orderedReceiver.url, load.ordered.each, Date.now(), 'owner-a', ordered.endpoint.id)).forEach((e, i) => orderedEvents.set(e, { launch: id, sequence: i + 1 }));
      }
      beside.push({ receiver: orderedReceiver, events: orderedEvents });
    }
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
    const [throttled, ordered] = beside.map(({ receiver, events }) => endpointLoad(receiver, events));
    return { latencies: [...committed].map(([id, at]) => (fast.firstSeen.get(id) ?? cutoff) - at), aSent, throttled, ordered };
  } finally {
    await Promise.all([fast, ...slow, ...(throttledReceiver ? [throttledReceiver] : []), ...(orderedReceiver ? [orderedReceiver] : [])].map((r) => r.close()));
    await bdb.close();
  }
}

interface Load {
  hosts: number;
  each: number;
  slowMs: number;
  /** A's throttled endpoint: its rate a second and its backlog. */
  throttled: { rate: number; backlog: number };
  /** A's ordered endpoint: launches of `each` events, answered after `answerMs`. */
  ordered: { launches: number; each: number; answerMs: number };
}

/** What an endpoint beside the measurement received: deliveries, the most in any one second, and events out of their launch's order. */
interface EndpointLoad {
  received: number;
  maxPerSecond: number;
  outOfOrder: number;
}

function endpointLoad(receiver: BenchReceiver, events: Map<string, { launch: string; sequence: number }>): EndpointLoad {
  const arrivals = [...receiver.firstSeen].map(([id, at]) => ({ at, ...events.get(id)! })).sort((a, b) => a.at - b.at);
  let maxPerSecond = 0;
  for (let i = 0, j = 0; i < arrivals.length; i++) {
    while (arrivals[i]!.at - arrivals[j]!.at >= 1000) j++;
    maxPerSecond = Math.max(maxPerSecond, i - j + 1);
  }
  const last = new Map<string, number>();
  let outOfOrder = 0;
  for (const a of arrivals) {
    if ((last.get(a.launch) ?? 0) > a.sequence) outOfOrder++;
    last.set(a.launch, Math.max(last.get(a.launch) ?? 0, a.sequence));
  }
  return { received: arrivals.length, maxPerSecond, outOfOrder };
}

/**
 * `fair-share`: owner B's event latency (p50, p99) while owner A keeps every slot it may use busy
 * with 12 receivers that answer 200 after 3 s (a backlog of 40 each), and beside them has a webhook
 * endpoint throttled to 5 a second with a backlog of 400 (pending rows the claim must pass over
 * until their slot) and an ordered endpoint with 8 launches of 30 events each (each waiting for the
 * one before), against B's latency alone. The note says what those two received, the most in any
 * one second and how many out of their launch's order.
 */
export async function benchFairness(count = 20, everyMs = 250): Promise<{ results: BenchResult[]; note: string }> {
  const load: Load = { hosts: 12, each: 40, slowMs: 3_000, throttled: { rate: 5, backlog: 400 }, ordered: { launches: 8, each: 30, answerMs: 100 } };
  const alone = await ownerBLatencies(count, everyMs);
  const loaded = await ownerBLatencies(count, everyMs, load);
  return {
    results: [
      result('fair-share-b-p50', percentile(loaded.latencies, 50), 'ms', percentile(alone.latencies, 50)),
      result('fair-share-b-p99', percentile(loaded.latencies, 99), 'ms', percentile(alone.latencies, 99)),
    ],
    note: `owner B: ${count} events ${everyMs} ms apart; owner A: ${load.hosts} receivers answering 200 after ${load.slowMs / 1000} s, ${load.each} deliveries each, ${loaded.aSent} of A's attempts sent meanwhile; beside them A's endpoint throttled to ${load.throttled.rate}/s (backlog ${load.throttled.backlog}: ${loaded.throttled?.received} received, at most ${loaded.throttled?.maxPerSecond} in any second) and A's ordered endpoint (${load.ordered.launches} launches × ${load.ordered.each} events, answered after ${load.ordered.answerMs} ms: ${loaded.ordered?.received} received, ${loaded.ordered?.outOfOrder} out of order); default caps (64 in flight, 48 per owner, 8 per host); baseline: B alone`,
  };
}
