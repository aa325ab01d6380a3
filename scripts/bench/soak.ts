import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { newSortableId } from '../../src/lib/ids.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createRetention } from '../../src/retention/retention.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { endpointHost, endpointKey } from '../../src/webhooks/endpointKey.js';
import { benchConfig } from './config.js';
import { insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { startBenchReceiver, type BenchReceiver } from './receiver.js';
import { median, result, type BenchResult } from './types.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SLICE = 6 * HOUR;
type ManualClock = ReturnType<typeof manualClock>;

/**
 * A slice's settled history in bulk, as a day of launches leaves it: `launches` complete launches
 * with three steps and three events each, every event delivered (its delivery and one attempt).
 */
async function settledHistory(db: Db, clock: ManualClock, url: string, launches: number): Promise<void> {
  const now = clock.now();
  const host = endpointHost(url);
  const endpoint = endpointKey(url);
  const body = JSON.stringify({ step: 'create_mint', transactions: [randomBytes(64).toString('base64')], accounts: { mint: randomBytes(32).toString('base64') } });
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < launches; start += 100) {
      const ls = [];
      const steps = [];
      const events = [];
      const deliveries = [];
      const attempts = [];
      for (let i = start; i < Math.min(launches, start + 100); i += 1) {
        const id = newSortableId('lch');
        ls.push({ id, owner: 'bench', status: 'complete' as const, request: '{}', webhook_url: url, webhook_secret_enc: 'x', error: null, request_id: null, lease_owner: null, lease_expires_at: null, run_after: now, created_at: now, updated_at: now, started_at: now, completed_at: now, payer: null });
        for (let s = 0; s < 3; s += 1) {
          steps.push({ launch_id: id, name: `step_${s}`, position: s, status: 'complete' as const, result: null, error: null, pending_tx: null, started_at: now, completed_at: now });
          const eventId = newSortableId('evt');
          const deliveryId = newSortableId('dlv');
          events.push({ id: eventId, launch_id: id, sequence: s + 1, event: 'launch.step_complete', body, request_id: null, created_at: now });
          deliveries.push({ id: deliveryId, event_id: eventId, launch_id: id, owner: 'bench', url, host, endpoint, status: 'delivered' as const, attempt_count: 1, next_attempt_at: now, lease_owner: null, lease_expires_at: null, last_error: null, last_status_code: 200, created_at: now, updated_at: now, completed_at: now });
          attempts.push({ id: newSortableId('att'), delivery_id: deliveryId, attempt: 1, started_at: now, duration_ms: 3, status_code: 200, outcome: 'success' as const, error_class: null, error_message: null, response_body: null });
        }
      }
      await trx.insertInto('launches').values(ls).execute();
      await trx.insertInto('launch_steps').values(steps).execute();
      await trx.insertInto('outbox_events').values(events).execute();
      await trx.insertInto('deliveries').values(deliveries).execute();
      await trx.insertInto('delivery_attempts').values(attempts).execute();
    }
  });
}

/**
 * Deliveries/s of the real dispatcher (the service's defaults) draining `count` due events of a new
 * launch to the receiver; the launch is complete after, so retention may take its rows later.
 */
async function dispatchRound(db: Db, clock: ManualClock, receiver: BenchReceiver, config: ReturnType<typeof benchConfig>, box: ReturnType<typeof createSecretBox>, count: number): Promise<number> {
  const launchId = await insertBenchLaunch(db, box, receiver.url, clock.now());
  await prefillOutbox(db, launchId, receiver.url, count, clock.now());
  const engine = createWebhookEngine({ db, clock, logger: silentLogger(), config, secretBox: box });
  const target = receiver.count + count;
  const started = performance.now();
  engine.start();
  await receiver.waitFor(target);
  await engine.stop();
  const seconds = (performance.now() - started) / 1000;
  await db.updateTable('launches').set({ status: 'complete', updated_at: clock.now(), completed_at: clock.now() }).where('id', '=', launchId).execute();
  return count / seconds;
}

async function footprint(db: Db, path: string): Promise<{ rows: number; bytes: number }> {
  let rows = 0;
  for (const table of ['launches', 'launch_steps', 'outbox_events', 'deliveries', 'delivery_attempts']) {
    rows += Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0]?.n);
  }
  // The checkpointer thread may be mid-checkpoint: a busy answer is tried again.
  for (let tries = 0; tries < 100; tries += 1) {
    const [row] = (await sql<{ busy: number }>`pragma wal_checkpoint(TRUNCATE)`.execute(db)).rows;
    if (row?.busy === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { rows, bytes: statSync(path).size };
}

/**
 * `soak`: the dispatcher's deliveries/s on day 1 and on day 30 of a simulated month on one SQLite
 * file (docs/benchmarks.md). Each six-hour slice of the month (the injected clock) adds a slice's
 * settled history in bulk — `perDay` delivered events a day, with their launches, steps and attempts
 * — then the retention sweep runs to its end (RETENTION and LAUNCH_RETENTION `retentionDays`, the
 * incremental vacuum giving the freed pages back). On day 1 and day 30, `rounds` rounds each drain
 * `count` due events through the real dispatcher to a receiver on 127.0.0.1; medians. Day 1 is
 * measured after {@link WARM_UP_ROUNDS} unmeasured rounds (V8 compiles the dispatcher through its
 * first ~15 000 deliveries: see dispatch.ts).
 */
export async function benchSoak(options: { count?: number; perDay?: number; days?: number; retentionDays?: number; rounds?: number } = {}): Promise<{ results: BenchResult[]; note: string }> {
  const { count = 3000, perDay = 6000, days = 30, retentionDays = 7, rounds = 5 } = options;
  const dir = mkdtempSync(join(tmpdir(), 'bench-soak-'));
  const path = join(dir, 'soak.sqlite');
  const opened = openDatabase(path);
  const receiver = await startBenchReceiver();
  try {
    const { db } = opened;
    await migrateToLatest(db);
    const secretKey = randomBytes(32);
    const box = createSecretBox(secretKey);
    const config = benchConfig(dir, secretKey);
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const keep = retentionDays * DAY;
    const retention = createRetention({ db, clock, logger: silentLogger(), retentionMs: keep, launchRetentionMs: keep, reclaimFreePages: opened.reclaimFreePages });
    const launchesPerSlice = Math.ceil(perDay / 3 / (DAY / SLICE));
    const sweepMs: number[] = [];
    const day = async () => {
      for (let s = 0; s < DAY / SLICE; s += 1) {
        await settledHistory(db, clock, receiver.url, launchesPerSlice);
        clock.advance(SLICE);
        const started = performance.now();
        await retention.drain();
        sweepMs.push(performance.now() - started);
      }
    };
    const measure = async () => {
      const rates: number[] = [];
      for (let r = 0; r < rounds; r += 1) rates.push(await dispatchRound(db, clock, receiver, config, box, count));
      return rates;
    };

    await day();
    for (let r = 0; r < WARM_UP_ROUNDS; r += 1) await dispatchRound(db, clock, receiver, config, box, count);
    const day1 = await measure();
    const at1 = await footprint(db, path);
    for (let d = 2; d <= days; d += 1) await day();
    const day30 = await measure();
    const at30 = await footprint(db, path);
    const perSweep = median(sweepMs.slice(retentionDays * 4));
    const mb = (b: number) => (b / 1_048_576).toFixed(1);
    return {
      results: [result('soak-day1', median(day1), 'deliveries/s', median(day1)), result(`soak-day${days}`, median(day30), 'deliveries/s', median(day1))],
      note: `one SQLite file, ${perDay} delivered events a day in bulk (launches, steps, deliveries, attempts), RETENTION = LAUNCH_RETENTION = ${retentionDays}d swept every 6 h of the injected clock (median sweep ${perSweep.toFixed(0)} ms once deleting); day 1: ${at1.rows} rows, ${mb(at1.bytes)} MB, day ${days}: ${at30.rows} rows, ${mb(at30.bytes)} MB; ${rounds} rounds of ${count} due events each day, day 1 ${day1.map((r) => r.toFixed(0)).join(' ')}, day ${days} ${day30.map((r) => r.toFixed(0)).join(' ')} deliveries/s`,
    };
  } finally {
    await receiver.close();
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Unmeasured rounds before day 1's (see benchSoak). */
const WARM_UP_ROUNDS = 3;
