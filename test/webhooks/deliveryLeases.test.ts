import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { claimDueDeliveries, claimWithFunctionPg, type ClaimArgs } from '../../src/webhooks/sql/claimDeliveries.js';
import { settleAndClaim } from '../../src/webhooks/settleAndClaim.js';
import { releaseClaim } from '../../src/webhooks/sql/settleDeliveries.js';
import { onPostgres } from '../support/database.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

// PostgreSQL only (migration 048): leases are noted in a table of their own, so taking one changes
// no indexed column of `deliveries` and is a HOT update; the per-host and per-endpoint caps count
// the live rows of that table, every claimer's.
describe.skipIf(!onPostgres)('the lease table (PostgreSQL)', () => {
  let tdb: TestDb;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    await tdb.close();
  });

  const args = (owner: string, limit: number, perHostCap = 3): ClaimArgs => ({ owner, now: clock.now(), leaseMs: 60_000, limit, perHostCap, excludeEndpoints: [], maxAttempts: 5 });
  const leaseRows = async () => (await sql<{ delivery_id: string; lease_owner: string; lease_token: number }>`select delivery_id, lease_owner, lease_token from delivery_leases order by delivery_id`.execute(tdb.db)).rows;

  it('a lease is a HOT update of deliveries: no index covers a lease column', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://h1.example.com/a', secret: 's', box }), 4);
    clock.advance(1_000);
    const hot = await tdb.db.transaction().execute(async (trx) => {
      const claimed = await claimWithFunctionPg(trx, args('dsp_a', 4, 8));
      const { rows } = await sql<{ updated: string; hot: string }>`select pg_stat_get_xact_tuples_updated('deliveries'::regclass) as updated,
        pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass) as hot`.execute(trx);
      return { claimed: claimed.length, updated: Number(rows[0]!.updated), hot: Number(rows[0]!.hot) };
    });
    // (Before migration 048 the partial index deliveries_leased covered lease_owner and lease_expires_at: 4 updated, 0 HOT.)
    expect(hot).toEqual({ claimed: 4, updated: 4, hot: 4 });
    const { rows: indexed } = await sql<{ index: string }>`select i.indexrelid::regclass::text as index from pg_index i
      join pg_attribute a on a.attrelid = i.indrelid and (a.attnum = any(i.indkey) or pg_get_expr(i.indpred, i.indrelid) like '%' || a.attname || '%')
      where i.indrelid = 'deliveries'::regclass and a.attname in ('lease_owner', 'lease_expires_at', 'lease_token', 'attempt_count', 'updated_at')`.execute(tdb.db);
    expect(indexed).toEqual([]);
  });

  it('a claim of whole pages of fresh rows leases every one of them in place (migration 057: fillfactor 50)', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://h1.example.com/a', secret: 's', box }), 40);
    clock.advance(1_000);
    const counts = (trx: typeof tdb.db) =>
      sql<{ updated: string; hot: string }>`select pg_stat_get_xact_tuples_updated('deliveries'::regclass) as updated,
        pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass) as hot`.execute(trx).then(({ rows }) => ({ updated: Number(rows[0]!.updated), hot: Number(rows[0]!.hot) }));
    const claimed = await tdb.db.transaction().execute(async (trx) => {
      const rows = await claimWithFunctionPg(trx, args('dsp_0a1b2c3d', 40, 100));
      return { claimed: rows.length, ...(await counts(trx)) };
    });
    // The 40 rows fill 3 pages; at fillfactor 70 (migration 048) 18 of the 40 new versions found room on their page.
    expect(claimed).toEqual({ claimed: 40, updated: 40, hot: 40 });
  });

  it('the host cap counts every claimer’s live leases from the table; a lease given back frees its slot and its row goes', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://h1.example.com/a', secret: 's', box }), 6);
    clock.advance(1_000);
    const first = await claimWithFunctionPg(tdb.db, args('dsp_a', 2));
    const second = await claimWithFunctionPg(tdb.db, args('dsp_b', 5));
    expect([first.length, second.length]).toEqual([2, 1]); // cap 3 for the host, whoever holds the leases
    expect(await claimWithFunctionPg(tdb.db, args('dsp_c', 5))).toHaveLength(0);
    expect((await leaseRows()).map((r) => r.lease_owner).sort()).toEqual(['dsp_a', 'dsp_a', 'dsp_b']);

    // A lease given back (not through the claim) leaves a stale row: it no longer counts, and the next claim drops it.
    const back = first[0]!;
    expect(await releaseClaim(tdb.db, { id: back.id, owner: 'dsp_a', token: back.lease_token }, clock.now())).toBe(true);
    const third = await claimWithFunctionPg(tdb.db, args('dsp_c', 5));
    expect(third).toHaveLength(1);
    const rows = await leaseRows();
    expect(rows).toHaveLength(3);
    // The delivery given back may be leased again by dsp_c, under a newer token (the row is replaced).
    const again = rows.find((r) => r.delivery_id === third[0]!.id)!;
    expect(again).toMatchObject({ lease_owner: 'dsp_c', lease_token: third[0]!.lease_token });

    // A half-open trial's lease (claimed outside the function) is counted too.
    await sql`update deliveries set lease_owner = null, lease_expires_at = null where lease_owner = 'dsp_b'`.execute(tdb.db);
    const trial = await claimDueDeliveries(tdb.db, { ...args('dsp_t', 1), onlyEndpoint: 'https://h1.example.com:443/a' });
    expect(trial).toHaveLength(1);
    expect((await leaseRows()).find((r) => r.delivery_id === trial[0]!.id)).toMatchObject({ lease_owner: 'dsp_t', lease_token: trial[0]!.lease_token });
    expect(await claimWithFunctionPg(tdb.db, args('dsp_d', 5))).toHaveLength(0);
  });

  it('a batch settle (migration 054) drops the lease rows of what it settled, fenced: a lease taken over keeps its new row and nothing is logged for it', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://h1.example.com/a', secret: 's', box }), 4);
    clock.advance(1_000);
    const [a, b, lost, canceled] = await claimWithFunctionPg(tdb.db, args('dsp_a', 4, 8));
    // Another dispatcher took `lost` over (a newer token, its own lease row); `canceled` was canceled while its attempt was out.
    await sql`update deliveries set lease_owner = 'dsp_b', lease_token = lease_token + 1 where id = ${lost!.id}`.execute(tdb.db);
    await sql`update delivery_leases set lease_owner = 'dsp_b', lease_token = lease_token + 1 where delivery_id = ${lost!.id}`.execute(tdb.db);
    await sql`update deliveries set status = 'canceled' where id = ${canceled!.id}`.execute(tdb.db);
    const ok = { ok: true, statusCode: 200, durationMs: 1, responseBody: '', errorClass: null, errorMessage: null };
    const settles = [a!, b!, lost!, canceled!].map((row) => ({ delivery: row, owner: 'dsp_a', launchOwner: 'acme', outcome: ok, startedAt: clock.now(), now: clock.now(), schedule: [0] }));
    const out = await settleAndClaim(tdb.db, { settles });
    expect(out.error).toBeUndefined();
    expect(out.results).toEqual(['delivered', 'delivered', 'lease_lost', 'canceled']);
    // Only the takeover's row is left (no claim ran to drop stale rows: the settle dropped its own).
    expect(await leaseRows()).toEqual([{ delivery_id: lost!.id, lease_owner: 'dsp_b', lease_token: lost!.lease_token + 1 }]);
    const states = await tdb.db.selectFrom('deliveries').select(['id', 'status', 'lease_owner']).orderBy('id').execute();
    expect(new Map(states.map((r) => [r.id, [r.status, r.lease_owner]]))).toEqual(
      new Map([[a!.id, ['delivered', null]], [b!.id, ['delivered', null]], [lost!.id, ['pending', 'dsp_b']], [canceled!.id, ['canceled', null]]]),
    );
    const logged = await tdb.db.selectFrom('delivery_attempts').select(['delivery_id', 'attempt']).execute();
    expect(new Set(logged.map((r) => `${r.delivery_id}:${r.attempt}`))).toEqual(new Set([a!, b!, canceled!].map((r) => `${r.id}:1`)));
  });

  it('the one-statement settle numbers its attempt rows from the sequence itself, in batch order (migration 058)', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://h1.example.com/a', secret: 's', box }), 5);
    clock.advance(1_000);
    const rows = await claimWithFunctionPg(tdb.db, args('dsp_a', 5, 8));
    expect(rows).toHaveLength(5);
    // An attempt logged the ordinary way first (through the column's default, rowid_after_xid).
    const ok = { ok: true, statusCode: 200, durationMs: 1, responseBody: '', errorClass: null, errorMessage: null };
    const settle = (row: (typeof rows)[number]) => ({ delivery: row, owner: 'dsp_a', launchOwner: 'acme', outcome: ok, startedAt: clock.now(), now: clock.now(), schedule: [0] });
    expect((await settleAndClaim(tdb.db, { settles: [settle(rows[4]!)], failSpent: { now: clock.now(), maxAttempts: 5 } })).results).toEqual(['delivered']);
    // Without the default an insert that relies on it fails (rowid is not null): before migration 058 this settle did.
    await sql`alter table delivery_attempts alter column rowid drop default`.execute(tdb.db);
    const batch = [rows[2]!, rows[0]!, rows[3]!, rows[1]!];
    const out = await settleAndClaim(tdb.db, { settles: batch.map(settle) });
    expect(out.error).toBeUndefined();
    expect(out.results).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    const { rows: logged } = await sql<{ delivery_id: string }>`select delivery_id from delivery_attempts order by rowid`.execute(tdb.db);
    expect(logged.map((r) => r.delivery_id)).toEqual([rows[4]!, ...batch].map((r) => r.id));
  });

  it('the lanes\' index holds pending rows only (migration 055), and every reader of it still finds it', async () => {
    const { rows } = await sql<{ def: string }>`select pg_get_indexdef('deliveries_pending_lane'::regclass) as def`.execute(tdb.db);
    expect(rows[0]!.def).toMatch(/\(endpoint, owner, next_attempt_at\) WHERE \(status = 'pending'::text\)$/);
    const readers = [
      "select id from deliveries where status = 'pending' and endpoint = 'e' and owner = 'o' and next_attempt_at <= 1 order by next_attempt_at limit 8",
      "select endpoint from deliveries d where d.status = 'pending' and d.endpoint > 'e' order by d.endpoint limit 1",
      "select endpoint, count(*) from deliveries where status = 'pending' group by endpoint",
      "select count(*) from deliveries where status = 'pending'",
    ];
    const plans = await tdb.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      const out: string[] = [];
      for (const text of readers) out.push((await sql.raw<{ 'QUERY PLAN': string }>(`explain ${text}`).execute(trx)).rows.map((r) => r['QUERY PLAN']).join('\n'));
      return out;
    });
    for (const plan of plans) expect(plan).toMatch(/deliveries_pending_lane/);
  });
});

// PostgreSQL only (migration 051): no global claim lock; two claims wait on each other only when
// they reach the same host.
describe.skipIf(!onPostgres)('claims contend per host (PostgreSQL)', () => {
  let tdb: TestDb;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    await tdb.close();
  });

  it('a claim on another host goes ahead while one is open; a claim on the same host waits for its commit and counts its leases', async () => {
    for (const url of ['https://h1.example.com/a', 'https://h2.example.com/a']) await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url, secret: 's', box }), 4);
    clock.advance(1_000);
    const claim = (owner: string, host: string): ClaimArgs => ({ owner, now: clock.now(), leaseMs: 60_000, limit: 8, perHostCap: 3, excludeEndpoints: [], maxAttempts: 5, onlyHost: host });
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let firstClaimed = 0;
    const open = tdb.db.transaction().execute(async (trx) => {
      firstClaimed = (await claimWithFunctionPg(trx, claim('dsp_a', 'h1.example.com'))).length;
      await committed; // held open: its host lock and its leases stay uncommitted
    });
    while (firstClaimed === 0) await new Promise((r) => setTimeout(r, 10));
    const timeout = <T>(p: Promise<T>, ms: number) => Promise.race([p, new Promise<'waiting'>((r) => setTimeout(() => r('waiting'), ms))]);
    // Another host: not held up (with one global lock it waited for the open claim's commit).
    expect(await timeout(claimWithFunctionPg(tdb.db, claim('dsp_b', 'h2.example.com')).then((rows) => rows.length), 5_000)).toBe(3);
    // The same host: waits, then sees the first claim's 3 leases and takes nothing past the cap.
    const same = claimWithFunctionPg(tdb.db, claim('dsp_c', 'h1.example.com')).then((rows) => rows.length);
    expect(await timeout(same, 500)).toBe('waiting');
    commit();
    await open;
    expect([firstClaimed, await same]).toEqual([3, 0]);
  });
});
