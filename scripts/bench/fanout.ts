import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openPostgres, type Db } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEndpoint } from '../../src/webhooks/endpoints/endpoints.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { recordEvent } from '../../src/webhooks/outbox.js';
import { benchConfig } from './config.js';
import { createBenchDb, insertBenchLaunch, type BenchDb } from './fixtures.js';
import { benchDatabaseUrl, freshDatabase } from './postgres.js';
import { startBenchReceiver } from './receiver.js';
import { median, result, type BenchResult } from './types.js';

/** One fan-out measured: the events recorded one per transaction, then every delivery drained. */
interface FanoutRun {
  /** ms per event recorded (its transaction committed). */
  recordMs: number;
  /** Deliveries written per event: the launch's own URL plus one per endpoint. */
  perEvent: number;
  /** Deliveries/s of the dispatcher draining them all. */
  drainPerSecond: number;
}

/**
 * An owner with `endpoints` webhook endpoints subscribed to everything, each its own local receiver
 * (its own host), and a launch whose own URL is one more: `events` events recorded through
 * `recordEvent`, each in its own transaction as a step records the event with its state change (the
 * event row, the owner's endpoints read, one delivery per destination), then the dispatcher drains
 * every delivery at the shipped caps.
 */
async function measureFanout(endpoints: number, events: number, maxMs: number, store: 'sqlite' | 'postgres' = 'sqlite'): Promise<FanoutRun> {
  const bdb = store === 'sqlite' ? await createBenchDb() : await postgresBenchDb();
  const receivers = await Promise.all(Array.from({ length: endpoints + 1 }, () => startBenchReceiver()));
  try {
    const config = benchConfig(bdb.dir, bdb.secretKey);
    const launchId = await insertBenchLaunch(bdb.db, bdb.box, receivers[0]!.url);
    for (const receiver of receivers.slice(1)) {
      await createEndpoint({ db: bdb.db, clock: systemClock, secretBox: bdb.box, maxEndpoints: endpoints }, 'bench', { url: receiver.url, events: ['*'], description: null, signatureScheme: 'service' });
    }
    const data = { step: 'create_mint', index: 0, total: 3, transactions: [] };
    const recordStarted = performance.now();
    for (let i = 0; i < events; i++) {
      await bdb.db.transaction().execute((trx) => recordEvent(trx, systemClock, { launchId, event: 'launch.step_complete', data, requestId: 'req_bench' }));
    }
    const recordMs = (performance.now() - recordStarted) / events;
    const written = Number((await bdb.db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    if (written !== events * (endpoints + 1)) throw new Error(`fanout bench: ${written} deliveries written, ${events * (endpoints + 1)} expected`);

    const engine = createWebhookEngine({ db: bdb.db, clock: systemClock, logger: silentLogger(), config, secretBox: bdb.box });
    const drainStarted = performance.now();
    engine.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(receivers.map((r) => r.waitFor(events))), new Promise((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
    await engine.stop();
    const seconds = (performance.now() - drainStarted) / 1000;
    const delivered = Number((await bdb.db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n);
    if (delivered === 0) throw new Error('fanout bench: nothing delivered');
    return { recordMs, perEvent: endpoints + 1, drainPerSecond: delivered / seconds };
  } finally {
    await Promise.all(receivers.map((r) => r.close()));
    await bdb.close();
  }
}

/** A fresh migrated database on the bench's PostgreSQL server, shaped like {@link createBenchDb}'s. */
async function postgresBenchDb(): Promise<BenchDb> {
  const fresh = await freshDatabase();
  const opened = openPostgres(fresh.url, { poolSize: 10 });
  await migrateToLatest(opened.db as Db);
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const secretKey = randomBytes(32);
  return {
    db: opened.db,
    path: fresh.url,
    dir,
    secretKey,
    box: createSecretBox(secretKey),
    async close() {
      await opened.close();
      await fresh.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Rounds of a wide and a narrow fan-out, alternating which goes first, after one unmeasured pair. */
async function fanoutRounds(endpoints: number, events: number, maxMs: number, roundCount: number, store: 'sqlite' | 'postgres'): Promise<{ wide: FanoutRun[]; narrow: FanoutRun[] }> {
  await measureFanout(endpoints, Math.min(events, 100), maxMs, store);
  await measureFanout(0, Math.min(events, 100), maxMs, store);
  const wide: FanoutRun[] = [];
  const narrow: FanoutRun[] = [];
  for (let round = 0; round < roundCount; round++) {
    if (round % 2 === 0) {
      wide.push(await measureFanout(endpoints, events, maxMs, store));
      narrow.push(await measureFanout(0, events, maxMs, store));
    } else {
      narrow.push(await measureFanout(0, events, maxMs, store));
      wide.push(await measureFanout(endpoints, events, maxMs, store));
    }
  }
  return { wide, narrow };
}

/**
 * `fanout`: what an event costs as it fans out to an owner's endpoints, at the default bound of 20
 * endpoints against none (the launch's own URL only), in alternating rounds after one unmeasured
 * pair; medians. `fanout-record-20` is the ms per event recorded with 21 destinations against 1,
 * `fanout-record-per-delivery` the same per delivery row written, `fanout-drain-20` the dispatcher's
 * deliveries/s over the 21 hosts against the one host of the baseline.
 */
export async function benchFanout(endpoints = 20, events = 500, maxMs = 20_000, roundCount = 3): Promise<{ results: BenchResult[]; note: string }> {
  const perEvent = endpoints + 1;
  const results: BenchResult[] = [];
  const notes: string[] = [];
  for (const store of benchDatabaseUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
    const { wide, narrow } = await fanoutRounds(endpoints, events, maxMs, roundCount, store);
    const suffix = store === 'postgres' ? '-pg' : '';
    const wideRecord = median(wide.map((r) => r.recordMs));
    const narrowRecord = median(narrow.map((r) => r.recordMs));
    results.push(
      result(`fanout-record-${endpoints}${suffix}`, wideRecord, 'ms/event', narrowRecord),
      result(`fanout-record-per-delivery${suffix}`, wideRecord / perEvent, 'ms/delivery', narrowRecord),
      result(`fanout-drain-${endpoints}${suffix}`, median(wide.map((r) => r.drainPerSecond)), 'deliveries/s', median(narrow.map((r) => r.drainPerSecond))),
    );
    notes.push(`${store}: record ms/event per round ${wide.map((r) => r.recordMs.toFixed(2)).join(' ')} against ${narrow.map((r) => r.recordMs.toFixed(2)).join(' ')}`);
  }
  return {
    results,
    note: `${events} events, each its own transaction through recordEvent, to the launch's URL plus ${endpoints} endpoints (${events * perEvent} deliveries, ${perEvent} hosts) against the URL alone (${events}, one host); then drained at the shipped caps, in process; ${roundCount} alternating rounds, medians; ${notes.join('; ')}${benchDatabaseUrl ? '' : '; the -pg rows need BENCH_DATABASE_URL'}`,
  };
}
