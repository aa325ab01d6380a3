import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type Db } from '../../src/db/database.js';
import { isPostgres } from '../../src/db/dialect.js';
import { claimLaunch, LeaseLostError, savePendingTx } from '../../src/launches/runStore.js';
import { insertLaunch } from '../../src/launches/store.js';
import { newId } from '../../src/lib/ids.js';
import { claimDueWatches, insertWatches } from '../../src/watcher/store.js';
import { manualClock } from '../../src/lib/clock.js';
import { claimDueDeliveries } from '../../src/webhooks/sql/claimDeliveries.js';
import { onPostgres } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';
import { captureLogger, commitEvents, createTestDb, insertLaunch as insertWebhookLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

// The PostgreSQL half only (TEST_DATABASE_URL): claims by several processes at once, which SQLite
// (one writer, one process per data directory) cannot have.
describe.skipIf(!onPostgres)('PostgreSQL (docs/architecture.md, SQLite and PostgreSQL)', () => {
  let t: TestDb;
  /** Separate pools: separate connections, as separate service processes would have. */
  const pools: Array<{ db: Db; close(): Promise<void> }> = [];
  beforeAll(async () => {
    t = await createTestDb();
    for (let i = 0; i < 4; i++) pools.push(openPostgres(t.path, { poolSize: 4 }));
  });
  afterAll(async () => {
    for (const p of pools) await p.close();
    await t?.close();
  });

  it('runs every migration; rows look as on SQLite: times and counts are numbers, metrics have their rowid', async () => {
    expect(isPostgres(t.db)).toBe(true);
    const now = Date.now();
    await insertLaunch(t.db, { id: 'lch_shape', owner: 'acme', request: '{}', webhookUrl: 'http://127.0.0.1:9/h', webhookSecretEnc: 'x', requestId: 'r', steps: ['create_mint'], now });
    const row = await t.db.selectFrom('launches').selectAll().where('id', '=', 'lch_shape').executeTakeFirstOrThrow();
    expect(row.created_at).toBe(now);
    expect(row.lease_token).toBe(0);
    const count = await t.db.selectFrom('launches').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(count.n).toBe(1);
    const { rows } = await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name in ('delivery_attempts', 'outbox_events') and column_name = 'rowid'`.execute(t.db);
    expect(rows).toHaveLength(2);
  });

  it('two hundred launches claimed by four processes at once: every launch claimed exactly once, nobody waits on a lock', async () => {
    const now = Date.now();
    const ids = Array.from({ length: 200 }, () => newId('lch'));
    for (const id of ids) await insertLaunch(t.db, { id, owner: 'race', request: '{}', webhookUrl: 'http://127.0.0.1:9/h', webhookSecretEnc: 'x', requestId: 'r', steps: [], now });
    const claimedBy = new Map<string, string[]>();
    // Each process claims as fast as it can with 4 connections; none of them ever releases.
    await Promise.all(
      pools.flatMap((p, i) =>
        Array.from({ length: 4 }, async () => {
          for (;;) {
            const row = await claimLaunch(p.db, { owner: `runner-${i}`, now, leaseMs: 60_000 });
            if (!row) return;
            if (row.owner !== 'race') continue;
            claimedBy.set(row.id, [...(claimedBy.get(row.id) ?? []), `runner-${i}`]);
          }
        }),
      ),
    );
    expect(claimedBy.size).toBe(200);
    expect([...claimedBy.values()].filter((owners) => owners.length > 1)).toEqual([]);
    const tokens = await t.db.selectFrom('launches').select('lease_token').where('owner', '=', 'race').execute();
    expect(tokens.every((r) => r.lease_token === 1)).toBe(true);
    // More than one process got work: the claims ran side by side.
    expect(new Set([...claimedBy.values()].flat()).size).toBeGreaterThan(1);
  });

  it('lease deadlines come from the database clock: a process whose clock runs a day ahead cannot take a live lease', async () => {
    const now = Date.now();
    const id = newId('lch');
    await insertLaunch(t.db, { id, owner: 'clock', request: '{}', webhookUrl: 'http://127.0.0.1:9/h', webhookSecretEnc: 'x', requestId: 'r', steps: [], now });
    // Claimed by a process whose clock runs an hour ahead: the deadline is still the server's now + lease.
    const first = await claimLaunch(pools[0]!.db, { owner: 'a', now: now + 3600_000, leaseMs: 60_000, running: [] });
    expect(first?.id).toBe(id);
    const { rows } = await sql<{ ms: number }>`select (extract(epoch from now()) * 1000)::bigint as ms`.execute(t.db);
    expect(Math.abs(Number(first?.lease_expires_at) - (rows[0]!.ms + 60_000))).toBeLessThan(5000);
    const ahead = await claimLaunch(pools[1]!.db, { owner: 'b', now: now + 86_400_000, leaseMs: 60_000 });
    expect(ahead?.id).not.toBe(id);
    // Once the deadline has passed on the database's clock, another process takes it over with the next token.
    await t.db.updateTable('launches').set({ lease_expires_at: rows[0]!.ms - 1 }).where('id', '=', id).execute();
    const takeover = await claimLaunch(pools[1]!.db, { owner: 'b', now, leaseMs: 60_000 });
    expect(takeover).toMatchObject({ id, lease_owner: 'b', lease_token: 2 });
  });

  it('watches claimed by four processes at once: each due watch goes to exactly one of them', async () => {
    const now = Date.now();
    const launchId = newId('lch');
    await insertLaunch(t.db, { id: launchId, owner: 'watch', request: '{}', webhookUrl: 'http://127.0.0.1:9/h', webhookSecretEnc: 'x', requestId: 'r', steps: [], now });
    await insertWatches(t.db, { launchId, watches: Array.from({ length: 120 }, (_, i) => ({ kind: 'transfers', address: `addr${i}`, context: {} })), now: now - 1000, ttlMs: 3600_000 });
    const seen: string[] = [];
    await Promise.all(
      pools.map(async (p, i) => {
        for (;;) {
          const claimed = await claimDueWatches(p.db, { owner: `watcher-${i}`, now, leaseMs: 60_000, limit: 7 });
          if (claimed.length === 0) return;
          seen.push(...claimed.map((w) => w.id));
        }
      }),
    );
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
  });

  it('deliveries claimed by four processes at once: each delivery goes to exactly one of them, with one attempt counted', async () => {
    const clock = manualClock(Date.now());
    const box = newSecretBox();
    // 3 hosts x 40 events, a per-host cap high enough that the cap is not what limits the claims.
    for (const port of [9, 10, 11]) {
      const launchId = await insertWebhookLaunch(t.db, clock, { url: `http://127.0.0.${port}:9/h`, secret: 'whsec_race', box, owner: 'deliveries' });
      await commitEvents(t.db, clock, launchId, 40);
    }
    const seen: string[] = [];
    await Promise.all(
      pools.flatMap((p, i) =>
        Array.from({ length: 3 }, async () => {
          for (;;) {
            const claimed = await claimDueDeliveries(p.db, { owner: `dispatcher-${i}`, now: clock.now(), leaseMs: 60_000, limit: 5, perHostCap: 1000, excludeEndpoints: [], maxAttempts: 5 });
            if (claimed.length === 0) return;
            seen.push(...claimed.map((d) => d.id));
          }
        }),
      ),
    );
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
    const rows = await t.db.selectFrom('deliveries').select(['attempt_count', 'lease_token']).where('launch_id', 'in', (eb) => eb.selectFrom('launches').select('id').where('owner', '=', 'deliveries')).execute();
    expect(rows.every((r) => r.attempt_count === 1 && r.lease_token === 1)).toBe(true);
  });

  it('a per-host cap holds across processes: a claim sees the leases of one that has not committed yet', async () => {
    const clock = manualClock(Date.now());
    const box = newSecretBox();
    const launchId = await insertWebhookLaunch(t.db, clock, { url: 'http://127.0.0.77:9/capped', secret: 'whsec_cap', box, owner: 'capped' });
    await commitEvents(t.db, clock, launchId, 40);
    const claim = (db: Db, owner: string) => claimDueDeliveries(db, { owner, now: clock.now(), leaseMs: 60_000, limit: 4, perHostCap: 4, excludeEndpoints: [], maxAttempts: 5 });
    let other: Promise<unknown[]> | undefined;
    // Process A claims the host's whole cap inside its settle-and-claim transaction; before A
    // commits, process B claims too. B must wait for A and then find the host full.
    const mine = await pools[0]!.db.transaction().execute(async (trx) => {
      const rows = await claim(trx, 'A');
      other = claim(pools[1]!.db, 'B');
      const waiting = async () => {
        for (;;) {
          const { rows: w } = await sql<{ n: number }>`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(t.db);
          if (w[0]!.n > 0) return;
          await new Promise((r) => setImmediate(r));
        }
      };
      await Promise.race([other, waiting()]);
      return rows;
    });
    expect(mine).toHaveLength(4);
    expect(await other).toEqual([]);
    const leased = await t.db.selectFrom('deliveries').select('id').where('launch_id', '=', launchId).where('lease_owner', 'is not', null).execute();
    expect(leased).toHaveLength(4);
  });

  it('a step write under a lease that another process is taking over waits for that claim and then writes nothing', async () => {
    const now = Date.now();
    await insertLaunch(t.db, { id: 'lch_takeover', owner: 'takeover', request: '{}', webhookUrl: 'http://127.0.0.1:9/h', webhookSecretEnc: 'x', requestId: 'r', steps: ['create_mint'], now });
    // Process A holds the launch (as a claim leaves it; other tests' launches are due too).
    await t.db.updateTable('launches').set({ lease_owner: 'runner-A', lease_token: 1, lease_expires_at: now + 60_000 }).where('id', '=', 'lch_takeover').execute();
    const lease = { launchId: 'lch_takeover', owner: 'runner-A', token: 1 };
    // Process B takes the launch over (A's lease ran out, say) and has not committed yet when A,
    // still running, records the transactions it is about to send.
    const written = await pools[1]!.db.transaction().execute(async (trx) => {
        await trx.updateTable('launches').set((eb) => ({ lease_owner: 'runner-B', lease_token: eb('lease_token', '+', 1) })).where('id', '=', 'lch_takeover').execute();
        const save = savePendingTx(pools[2]!.db, lease, { step: 'create_mint', pending: { signatures: ['sigA'] } }).then(
          () => 'written',
          (error: unknown) => (error instanceof LeaseLostError ? 'lease lost' : `error: ${String(error)}`),
        );
        // Give A's statement time to run: without a lock on the launch row it commits at once.
        const early = await Promise.race([save, new Promise((r) => setTimeout(() => r('waiting'), 300))]);
        return { early, save };
    });
    expect(written.early).toBe('waiting');
    expect(await written.save).toBe('lease lost');
    const step = await t.db.selectFrom('launch_steps').select('pending_tx').where('launch_id', '=', 'lch_takeover').executeTakeFirstOrThrow();
    expect(step.pending_tx).toBeNull();
  });
});

// The embedded chain keeps its state in a SQLite file of its own only beside a PostgreSQL database.
describe.skipIf(!onPostgres)('the embedded chain\'s own SQLite file beside PostgreSQL', () => {
  const dirs: string[] = [];
  let t: TestService | undefined;
  afterAll(async () => {
    await t?.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('gets no advice about its auto_vacuum at start: npm run vacuum switches the service\'s database only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chain-store-'));
    dirs.push(dir);
    const chainFile = join(dir, 'chain.sqlite');
    const legacy = new SqliteDatabase(chainFile);
    legacy.exec('create table made_before (x integer)');
    legacy.close();
    const { logger, lines } = captureLogger();
    t = await startTestService({ logger, embeddedChainFile: chainFile });
    expect(t.config.postgres).toBeDefined();
    const chainStore = new SqliteDatabase(chainFile, { readonly: true });
    expect(chainStore.pragma('auto_vacuum', { simple: true })).toBe(0); // NONE: the old code advised switching it
    chainStore.close();
    expect(lines.filter((line) => line.includes('auto_vacuum'))).toEqual([]);
  });
});
