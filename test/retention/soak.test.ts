import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, openPostgres, type Db } from '../../src/db/database.js';
import { insertLaunch } from '../../src/launches/store.js';
import { manualClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createRetention, type Retention } from '../../src/retention/retention.js';
import { createWebhookEngine, type WebhookEngine } from '../../src/webhooks/engine.js';
import { recordEvent } from '../../src/webhooks/outbox.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';
import { engineConfig, newSecretBox, startReceiver, type Receiver } from '../support/webhooks.js';

/**
 * A month of a service's life in a minute: the injected clock moves six hours at a time; in each
 * slice launches are recorded through the launch store, their events through the outbox, every
 * delivery goes through the real dispatcher to a real receiver on 127.0.0.1, and the retention
 * sweep (with, on SQLite, the incremental vacuum) runs to the end. The first three days carry four
 * times the steady load (a launch campaign): what they leave must go, rows and file space alike.
 * RETENTION and LAUNCH_RETENTION are 3 days here so that a month is ten retention periods.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SLICE = 6 * HOUR;
const KEEP = 3 * DAY;
const STEADY_LAUNCHES_PER_SLICE = 8;
const BURST_DAYS = 3;
const BURST_FACTOR = 4;
const EVENTS_PER_LAUNCH = 3;
const TABLES = ['launches', 'launch_steps', 'outbox_events', 'deliveries', 'delivery_attempts'] as const;
type Counts = Record<(typeof TABLES)[number], number>;
interface Snapshot {
  day: number;
  rows: Counts;
  /** SQLite: the database file once its WAL is checkpointed, and the pages in use (not free) of it. */
  fileBytes?: number;
  usedBytes?: number;
}

/** What a launch's step events carry: three signatures and its accounts, about 700 bytes of body. */
const stepData = (launchId: string, index: number) => ({
  step: ['create_mint', 'mint_supply', 'create_pool'][index],
  index,
  total: EVENTS_PER_LAUNCH,
  launchId,
  transactions: Array.from({ length: 3 }, () => newId('sig', 64)),
  accounts: { mint: newId('mint', 32), pool: newId('pool', 32), authority: newId('auth', 32) },
});

describe('a simulated month of launches and deliveries', () => {
  const clock = manualClock(Date.UTC(2026, 0, 1));
  const dir = mkdtempSync(join(tmpdir(), 'soak-'));
  const path = join(dir, 'soak.sqlite');
  let db: Db;
  let close: () => Promise<void>;
  let reclaimFreePages: ((pages: number) => Promise<{ freed: number; left: number }>) | undefined;
  let receiver: Receiver;
  let engine: WebhookEngine;
  let retention: Retention;
  const box = newSecretBox();

  beforeAll(async () => {
    if (onPostgres) {
      const created = await createPostgresDatabase();
      const opened = openPostgres(created.url);
      db = opened.db;
      close = async () => (await opened.close(), await created.drop());
    } else {
      const opened = openDatabase(path);
      db = opened.db;
      reclaimFreePages = opened.reclaimFreePages;
      close = () => opened.close();
    }
    await migrateToLatest(db);
    receiver = await startReceiver(clock);
    engine = createWebhookEngine({ db, clock, logger: silentLogger(), config: engineConfig(), secretBox: box });
    retention = createRetention({ db, clock, logger: silentLogger(), retentionMs: KEEP, launchRetentionMs: KEEP, reclaimFreePages });
  });

  afterAll(async () => {
    await engine?.stop();
    await receiver?.close();
    await close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One slice: `launches` launches run and complete, their events are delivered, time moves on, retention runs. */
  async function slice(launches: number): Promise<number> {
    let events = 0;
    for (let i = 0; i < launches; i += 1) {
      const launchId = newId('lch');
      const steps = ['create_mint', 'mint_supply', 'create_pool'];
      await insertLaunch(db, { id: launchId, owner: 'acme', request: JSON.stringify({ name: 'Soak', ticker: 'SOAK' }), webhookUrl: receiver.url, webhookSecretEnc: box.seal('whsec_soak'), requestId: newId('req'), steps, now: clock.now() });
      for (let index = 0; index < EVENTS_PER_LAUNCH; index += 1) {
        await db.transaction().execute(async (trx) => {
          await trx.updateTable('launch_steps').set({ status: 'complete', started_at: clock.now(), completed_at: clock.now() }).where('launch_id', '=', launchId).where('position', '=', index).execute();
          if (index === EVENTS_PER_LAUNCH - 1) await trx.updateTable('launches').set({ status: 'complete', completed_at: clock.now(), updated_at: clock.now() }).where('id', '=', launchId).execute();
          await recordEvent(trx, clock, { launchId, event: 'launch.step_complete', data: stepData(launchId, index), requestId: null });
        });
        events += 1;
      }
    }
    await engine.dispatcher.drain();
    clock.advance(SLICE);
    await retention.drain();
    return events;
  }

  async function snapshot(day: number): Promise<Snapshot> {
    const rows = {} as Counts;
    for (const table of TABLES) {
      const r = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(db);
      rows[table] = Number(r.rows[0]?.n);
    }
    if (onPostgres) return { day, rows };
    const pages = async (name: string) => Number(Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as Record<string, unknown>)[0]);
    const pageSize = await pages('page_size');
    // The service's checkpointer thread may be mid-checkpoint: a busy answer is tried again.
    for (let tries = 0; ; tries += 1) {
      const [row] = (await sql<{ busy: number }>`pragma wal_checkpoint(TRUNCATE)`.execute(db)).rows;
      if (row?.busy === 0) break;
      if (tries > 100) throw new Error('the WAL could not be checkpointed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return { day, rows, fileBytes: statSync(path).size, usedBytes: ((await pages('page_count')) - (await pages('freelist_count'))) * pageSize };
  }

  it('keeps every table and the database file within a bound that does not grow with time, every event delivered', async () => {
    const snapshots = new Map<number, Snapshot>();
    let recorded = 0;
    let received = 0;
    for (let day = 1; day <= 30; day += 1) {
      const launches = STEADY_LAUNCHES_PER_SLICE * (day <= BURST_DAYS ? BURST_FACTOR : 1);
      for (let s = 0; s < DAY / SLICE; s += 1) {
        recorded += await slice(launches);
        received += receiver.requests.length;
        receiver.requests.length = 0;
      }
      if ([BURST_DAYS, 10, 20, 30].includes(day)) snapshots.set(day, await snapshot(day));
    }
    const at = (d: number): Snapshot => snapshots.get(d) ?? expect.fail(`no snapshot of day ${d}`);
    const [peak, day10, day20, day30] = [at(BURST_DAYS), at(10), at(20), at(30)];
    const report = [...snapshots.values()].map((s) => `day ${s.day}: ${TABLES.map((t) => `${t} ${s.rows[t]}`).join(', ')}${s.fileBytes === undefined ? '' : `; file ${s.fileBytes} bytes, ${s.usedBytes} in use`}`);
    process.stdout.write(`soak (${onPostgres ? 'PostgreSQL' : 'SQLite'}): ${recorded} events over 30 days\n  ${report.join('\n  ')}\n`);

    // Every event of the month was delivered once, through the dispatcher.
    expect(received).toBe(recorded);
    expect(recorded).toBe((BURST_DAYS * BURST_FACTOR + (30 - BURST_DAYS)) * STEADY_LAUNCHES_PER_SLICE * 4 * EVENTS_PER_LAUNCH);
    // Rows: what retention keeps of a steady load (3 days of it) on day 10, day 20 and day 30 alike —
    // without retention day 30 holds three times day 10.
    const steadyLaunches = (KEEP / SLICE) * STEADY_LAUNCHES_PER_SLICE;
    for (const table of TABLES) {
      expect(day10.rows[table]).toBeGreaterThan(0);
      for (const later of [day20, day30]) expect(later.rows[table], `${table} on day ${later.day}`).toBeLessThanOrEqual(Math.ceil(day10.rows[table] * 1.2));
    }
    // And that is the steady state (3 days of launches, a slice more while it ages out), whatever the month did before.
    const launchBound = steadyLaunches + STEADY_LAUNCHES_PER_SLICE;
    for (const s of [day10, day20, day30]) {
      expect(s.rows.launches).toBeLessThanOrEqual(launchBound);
      expect(s.rows.launch_steps).toBeLessThanOrEqual(launchBound * 3);
      for (const table of ['outbox_events', 'deliveries', 'delivery_attempts'] as const) expect(s.rows[table]).toBeLessThanOrEqual(launchBound * EVENTS_PER_LAUNCH);
    }
    if (onPostgres) return;

    // The file: after the campaign's rows are deleted it gives their space back (the incremental
    // vacuum: without it the file stays at its peak), and from day 10 on it does not grow. Bound:
    // 25 % over day 10, plus the one vacuum step of free pages (128 × 4 KiB) kept for new rows.
    const slack = 128 * 4096;
    expect(day10.fileBytes!).toBeLessThan(peak.fileBytes! / 2);
    for (const later of [day20, day30]) expect(later.fileBytes!, `file on day ${later.day}`).toBeLessThanOrEqual(day10.fileBytes! * 1.25 + slack);
    // What is in the file is the data: free pages are at most that one step.
    expect(day30.fileBytes! - day30.usedBytes!).toBeLessThanOrEqual(slack);
  }, 180_000);
});
