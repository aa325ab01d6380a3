import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { CLAIM_PARAMS_PG, claimDueDeliveries, claimFunctionParams, type ClaimArgs } from '../../src/webhooks/sql/claimDeliveries.js';
import { execSql } from '../../src/db/sqlText.js';
import { shareSlots, type Lane } from '../../src/webhooks/sql/shareSlots.js';
import { onPostgres } from '../support/database.js';
import { commitEvents, createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

// PostgreSQL only: the ordinary claim is one function there (migration 023). Its sharing of slots
// must be shareSlots' exactly: the same lanes, leases, caps and holds give the same count per lane.
describe.skipIf(!onPostgres)('the PostgreSQL claim function', () => {
  let tdb: TestDb;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    await tdb.close();
  });

  /** Per lane (`endpoint owner`): how many of its deliveries the claim should lease, by shareSlots over the table as it is. */
  async function expected(args: ClaimArgs): Promise<Record<string, number>> {
    const { rows: lanes } = await sql<{ endpoint: string; owner: string; host: string; due: number; free: number }>`
      select endpoint, owner, min(host) as host, min(next_attempt_at) as due,
        count(*) filter (where lease_owner is null and next_attempt_at <= ${args.now})::integer as free
      from deliveries where status = 'pending' group by endpoint, owner order by endpoint, owner`.execute(tdb.db);
    const { rows: busy } = await sql<{ host: string; endpoint: string; n: number }>`
      select host, endpoint, count(*)::integer as n from deliveries
      where lease_owner is not null and lease_expires_at > (extract(epoch from now()) * 1000)::bigint and status = 'pending' group by host, endpoint`.execute(tdb.db);
    const hostBusy = (h: string) => busy.filter((b) => b.host === h).reduce((s, b) => s + b.n, 0);
    const endpointBusy = (e: string) => busy.filter((b) => b.endpoint === e).reduce((s, b) => s + b.n, 0);
    const perEndpointCap = args.perEndpointCap ?? args.perHostCap;
    const due: Lane[] = lanes
      .filter((l) => Number(l.due) <= args.now && !args.excludeEndpoints.includes(l.endpoint))
      .map((l) => ({ endpoint: l.endpoint, owner: l.owner, host: l.host, dueAt: Number(l.due) }));
    const shares = shareSlots({
      lanes: due,
      limit: args.limit,
      hostFree: (h) => args.perHostCap - hostBusy(h),
      endpointFree: (e) => Math.min(perEndpointCap, args.endpointCaps?.get(e) ?? perEndpointCap) - endpointBusy(e),
      ownerHeld: (o) => args.ownerHeld?.get(o) ?? 0,
      perOwnerCap: args.perOwnerCap ?? Infinity,
    });
    const out: Record<string, number> = {};
    for (const [lane, n] of shares) {
      const free = lanes.find((l) => l.endpoint === lane.endpoint && l.owner === lane.owner)!.free;
      if (Math.min(n, free) > 0) out[`${lane.endpoint} ${lane.owner}`] = Math.min(n, free);
    }
    return out;
  }

  it('leases per lane what shareSlots gives it, over owners, endpoints and hosts with live leases, lowered caps and holds', async () => {
    // Three owners; owner a on three endpoints of two hosts, b on two, c on one; due times interleaved.
    const plan: Array<[string, string, number]> = [
      ['a', 'https://h1.example.com/a', 5],
      ['b', 'https://h1.example.com/c', 4],
      ['a', 'https://h1.example.com/b', 6],
      ['c', 'https://h3.example.com/a', 3],
      ['a', 'https://h2.example.com/a', 4],
      ['b', 'https://h2.example.com/b', 7],
    ];
    for (const [owner, url, n] of plan) {
      clock.advance(1_000);
      await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url, secret: 's', box, owner }), n);
    }
    clock.advance(1_000);
    const base = { now: clock.now(), leaseMs: 60_000, maxAttempts: 5, excludeEndpoints: [] as string[] };
    const turns: Array<Omit<ClaimArgs, 'owner' | 'now' | 'leaseMs' | 'maxAttempts' | 'excludeEndpoints'> & { excludeEndpoints?: string[] }> = [
      { limit: 3, perHostCap: 8 },
      { limit: 7, perHostCap: 5, perEndpointCap: 3, endpointCaps: new Map([['https://h1.example.com:443/a', 1]]) },
      { limit: 9, perHostCap: 8, perOwnerCap: 4, ownerHeld: new Map([['a', 2], ['c', 1]]) },
      { limit: 5, perHostCap: 9, excludeEndpoints: ['https://h2.example.com:443/a'], ownerHeld: new Map([['b', 3]]) },
      { limit: 20, perHostCap: 12, perEndpointCap: 4 },
      { limit: 20, perHostCap: 20 },
    ];
    let claimedAll = 0;
    for (const [i, turn] of turns.entries()) {
      const args: ClaimArgs = { ...base, ...turn, excludeEndpoints: turn.excludeEndpoints ?? [], owner: `dsp_${i}` };
      const want = await expected(args);
      const rows = await claimDueDeliveries(tdb.db, args);
      const got: Record<string, number> = {};
      const owners = new Map((await tdb.db.selectFrom('deliveries').select(['id', 'owner']).execute()).map((d) => [d.id, d.owner]));
      for (const r of rows) got[`${r.endpoint} ${owners.get(r.id)}`] = (got[`${r.endpoint} ${owners.get(r.id)}`] ?? 0) + 1;
      expect({ turn: i, got }).toEqual({ turn: i, got: want });
      expect(rows.every((r) => r.lease_owner === args.owner && r.attempt_count === 1 && r.lease_token === 1)).toBe(true);
      claimedAll += rows.length;
    }
    expect(claimedAll).toBeGreaterThan(15);
  });

  it('returns what an attempt needs and no more (migration 056): no status, lease deadline or timestamps', async () => {
    await commitEvents(tdb.db, clock, await insertLaunch(tdb.db, clock, { url: 'https://h1.example.com/a', secret: 's', box, owner: 'acme' }), 2);
    clock.advance(1_000);
    const args: ClaimArgs = { owner: 'dsp_n', now: clock.now(), leaseMs: 60_000, limit: 5, perHostCap: 8, excludeEndpoints: [], maxAttempts: 5 };
    const { rows } = await execSql<Record<string, unknown>>(tdb.db, `select * from claim_webhook_deliveries(${CLAIM_PARAMS_PG})`, claimFunctionParams(args));
    const leased = rows.filter((r) => r.id !== null);
    expect(leased).toHaveLength(2);
    // Before migration 056: 35 columns, the whole delivery row (status, lease_owner, lease_expires_at, created_at, ...) besides.
    expect(Object.keys(leased[0]!).sort()).toEqual(
      ['id', 'event_id', 'launch_id', 'url', 'host', 'endpoint', 'endpoint_id', 'attempt_count', 'lease_token', 'ctx_owner', 'event', 'sequence', 'body', 'request_id',
        'webhook_secret_enc', 'secret_enc', 'signature_scheme', 'previous_secret_enc', 'previous_secret_expires_at', 'rate_limit_per_second', 'host_allowance', 'endpoint_allowance'].sort(),
    );
    const events = await tdb.db.selectFrom('outbox_events').select(['id', 'event', 'sequence', 'body']).execute();
    for (const row of leased) {
      const event = events.find((e) => e.id === row.event_id)!;
      expect(row).toMatchObject({ ctx_owner: 'acme', event: event.event, sequence: event.sequence, body: event.body, attempt_count: 1, lease_token: 1 });
      expect(typeof row.webhook_secret_enc).toBe('string');
    }
  });
});
