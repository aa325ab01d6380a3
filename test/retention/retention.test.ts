import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { createRetention } from '../../src/retention/retention.js';
import { silentLogger } from '../../src/lib/logger.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

const DAY = 86_400_000;

/** The tables the watcher and the embedded chain's history own, as the sweep sees them. */
type Extra = {
  watches: Record<string, unknown>;
  watch_reported: Record<string, unknown>;
  chain_address_signatures: { address: string; seq: number; signature: string };
};

let n = 0;
const id = (prefix: string) => `${prefix}_${++n}`;

async function launch(db: Db, status: 'queued' | 'processing' | 'complete' | 'failed', at: number): Promise<string> {
  const launchId = id('lch');
  await db
    .insertInto('launches')
    .values({ id: launchId, owner: 'acme', status, request: '{}', webhook_url: 'http://127.0.0.1:9/h', webhook_secret_enc: 'x', error: null, request_id: null, lease_owner: null, lease_expires_at: null, created_at: at, updated_at: at, started_at: at, completed_at: status === 'complete' ? at : null })
    .execute();
  await db.insertInto('launch_steps').values({ launch_id: launchId, name: 'create_mint', position: 0, status: 'complete', result: null, error: null, pending_tx: null, started_at: at, completed_at: at }).execute();
  return launchId;
}

let seq = 0;
async function event(db: Db, launchId: string, at: number, deliveries: Array<{ status: 'pending' | 'delivered' | 'failed' | 'paused' | 'canceled'; at?: number }>): Promise<{ eventId: string; deliveryIds: string[] }> {
  const eventId = id('evt');
  await db.insertInto('outbox_events').values({ id: eventId, launch_id: launchId, sequence: ++seq, event: 'launch.step_complete', body: '{}', request_id: null, created_at: at }).execute();
  const deliveryIds: string[] = [];
  for (const d of deliveries) {
    const deliveryId = id('dlv');
    const settledAt = d.at ?? at;
    await db
      .insertInto('deliveries')
      .values({ id: deliveryId, event_id: eventId, launch_id: launchId, url: 'http://127.0.0.1:9/h', host: '127.0.0.1:9', endpoint: 'http://127.0.0.1:9/h', status: d.status, next_attempt_at: at, lease_owner: null, lease_expires_at: null, last_error: null, last_status_code: null, created_at: at, updated_at: settledAt, completed_at: d.status === 'pending' ? null : settledAt })
      .execute();
    await db
      .insertInto('delivery_attempts')
      .values({ id: id('att'), delivery_id: deliveryId, attempt: 1, started_at: at, duration_ms: 5, status_code: 200, outcome: 'success', error_class: null, error_message: null, response_body: null })
      .execute();
    deliveryIds.push(deliveryId);
  }
  return { eventId, deliveryIds };
}

async function deadLetter(db: Db, args: { launchId: string; eventId?: string; deliveryId?: string; status: 'open' | 'retried' | 'resolved'; at: number; closedAt?: number }): Promise<string> {
  const dlId = id('dlq');
  const closed = args.closedAt ?? args.at;
  await db
    .insertInto('dead_letters')
    .values({ id: dlId, kind: args.eventId ? 'delivery' : 'launch', owner: 'acme', launch_id: args.launchId, delivery_id: args.deliveryId ?? null, event_id: args.eventId ?? null, step: null, error_code: 'x', error_message: 'x', status: args.status, created_at: args.at, updated_at: args.status === 'open' ? args.at : closed, resolved_at: args.status === 'resolved' ? closed : null })
    .execute();
  return dlId;
}

async function watch(db: Db, launchId: string, address: string, state: 'active' | 'ended', at: number): Promise<string> {
  const watchId = id('wch');
  await db
    .withTables<Extra>()
    .insertInto('watches')
    .values({ id: watchId, launch_id: launchId, kind: 'pool', address, context: '{}', state, next_check_at: at, interval_ms: 1000, ends_at: at, created_at: at, updated_at: at, fence: 0 })
    .execute();
  await db.withTables<Extra>().insertInto('watch_reported').values({ launch_id: launchId, signature: id('sig'), instruction_index: 0, event: 'pool.swap', event_id: id('evt'), created_at: at }).execute();
  for (let i = 0; i < 3; i += 1) await db.withTables<Extra>().insertInto('chain_address_signatures').values({ address, seq: ++seq, signature: id('sig') }).execute();
  return watchId;
}

const count = async (db: Db, table: string, where?: [string, string]) => {
  let q = db.withTables<Record<string, Record<string, unknown>>>().selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'));
  if (where) q = q.where(where[0], '=', where[1]);
  return Number((await q.executeTakeFirstOrThrow()).n);
};
const exists = async (db: Db, table: string, column: string, value: string) => (await count(db, table, [column, value])) > 0;

describe('retention', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('deletes settled events with their deliveries and attempts after RETENTION, and keeps fresh and undelivered ones', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock });
    const db = t.service.db;
    const old = clock.now();
    const done = await launch(db, 'complete', old);
    const delivered = await event(db, done, old, [{ status: 'delivered' }, { status: 'canceled' }]);
    const pending = await event(db, done, old, [{ status: 'delivered' }, { status: 'pending' }]);
    const paused = await event(db, done, old, [{ status: 'paused' }]);
    const redelivered = await event(db, done, old, [{ status: 'delivered', at: old + 20 * DAY }]);
    const running = await launch(db, 'processing', old);
    const inFlight = await event(db, running, old, [{ status: 'delivered' }]);
    const failed = await event(db, done, old, [{ status: 'failed' }]);
    await deadLetter(db, { launchId: done, eventId: failed.eventId, deliveryId: failed.deliveryIds[0], status: 'open', at: old });
    const resolvedLate = await event(db, done, old, [{ status: 'failed' }]);
    await deadLetter(db, { launchId: done, eventId: resolvedLate.eventId, deliveryId: resolvedLate.deliveryIds[0], status: 'resolved', at: old, closedAt: old + 10 * DAY });
    const resolvedEarly = await event(db, done, old, [{ status: 'failed' }]);
    const earlyDl = await deadLetter(db, { launchId: done, eventId: resolvedEarly.eventId, deliveryId: resolvedEarly.deliveryIds[0], status: 'resolved', at: old });

    clock.advance(30 * DAY - 1);
    const fresh = await event(db, done, clock.now(), [{ status: 'delivered' }]);
    expect(await t.service.retention.drain()).toMatchObject({ events: 0, deadLetters: 0 });
    clock.advance(2);
    const deleted = await t.service.retention.drain();
    expect(deleted).toMatchObject({ events: 2, deadLetters: 1, launches: 0 });

    for (const gone of [delivered, resolvedEarly]) {
      expect(await exists(db, 'outbox_events', 'id', gone.eventId)).toBe(false);
      for (const d of gone.deliveryIds) {
        expect(await exists(db, 'deliveries', 'id', d)).toBe(false);
        expect(await exists(db, 'delivery_attempts', 'delivery_id', d)).toBe(false);
      }
    }
    expect(await exists(db, 'dead_letters', 'id', earlyDl)).toBe(false);
    for (const kept of [pending, paused, redelivered, inFlight, failed, resolvedLate, fresh]) {
      expect(await exists(db, 'outbox_events', 'id', kept.eventId)).toBe(true);
      for (const d of kept.deliveryIds) expect(await exists(db, 'delivery_attempts', 'delivery_id', d)).toBe(true);
    }
    // Launches and their steps are the customer's record: kept without LAUNCH_RETENTION.
    expect(await count(db, 'launches')).toBe(2);
    expect(await exists(db, 'launch_steps', 'launch_id', done)).toBe(true);

    // Ten days on, the dead letter resolved later has passed RETENTION too, and its event goes with it.
    clock.advance(10 * DAY);
    expect(await t.service.retention.drain()).toMatchObject({ events: 1, deadLetters: 1 });
    expect(await exists(db, 'outbox_events', 'id', resolvedLate.eventId)).toBe(false);
  });

  it('keeps the events of a launch created through the API while its webhook is undelivered, however old', async () => {
    const clock = manualClock(Date.now());
    t = await startTestService({ clock });
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const launchId = await t.createLaunch(key, launchBody({ webhookUrl: 'http://127.0.0.1:9/hooks' }));
    const before = await count(t.service.db, 'outbox_events', ['launch_id', launchId]);
    expect(before).toBeGreaterThan(0);
    clock.advance(365 * DAY);
    await t.service.retention.drain();
    expect(await count(t.service.db, 'outbox_events', ['launch_id', launchId])).toBe(before);
    expect(await count(t.service.db, 'deliveries', ['launch_id', launchId])).toBeGreaterThan(0);
  });

  it('deletes ended watches with their history index and reported keys, expired sessions and old windows', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock });
    const db = t.service.db;
    const old = clock.now();
    const done = await launch(db, 'complete', old);
    const ended = await watch(db, done, 'EndedAddr', 'ended', old);
    const other = await launch(db, 'complete', old);
    const active = await watch(db, other, 'ActiveAddr', 'active', old);
    // An ended watch whose address another (active) watch still follows keeps that address's index.
    const sharedEnded = await watch(db, done, 'ActiveAddr', 'ended', old);
    await db.insertInto('dashboard_sessions').values({ id_hash: 'old', key_id: 'k', csrf_token: 'c', created_at: old, expires_at: old + 3600_000 }).execute();
    await db.insertInto('rate_limit_windows').values({ subject: 'key:1', window_start: old, count: 3 }).execute();

    clock.advance(31 * DAY);
    await db.insertInto('dashboard_sessions').values({ id_hash: 'new', key_id: 'k', csrf_token: 'c', created_at: clock.now(), expires_at: clock.now() + 3600_000 }).execute();
    await db.insertInto('rate_limit_windows').values({ subject: 'key:1', window_start: clock.now(), count: 1 }).execute();
    await t.service.retention.drain();

    const extra = db.withTables<Extra>();
    expect(await exists(db, 'watches', 'id', ended)).toBe(false);
    expect(await exists(db, 'watches', 'id', sharedEnded)).toBe(false);
    expect(await exists(db, 'watches', 'id', active)).toBe(true);
    expect(await count(db, 'chain_address_signatures', ['address', 'EndedAddr'])).toBe(0);
    expect(await count(db, 'chain_address_signatures', ['address', 'ActiveAddr'])).toBe(6);
    expect(await count(db, 'watch_reported', ['launch_id', done])).toBe(0);
    expect(await count(db, 'watch_reported', ['launch_id', other])).toBe(1);
    expect((await extra.selectFrom('dashboard_sessions').select('id_hash').execute()).map((r) => r.id_hash)).toEqual(['new']);
    expect(await count(db, 'rate_limit_windows')).toBe(1);
  });

  it('deletes ended launches and their steps only with LAUNCH_RETENTION, once nothing else of theirs is left', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock, env: { LAUNCH_RETENTION: '90d' } });
    const db = t.service.db;
    const old = clock.now();
    const complete = await launch(db, 'complete', old);
    await event(db, complete, old, [{ status: 'delivered' }]);
    await db.insertInto('idempotency_keys').values({ owner: 'acme', key: 'k1', request_hash: 'h', state: 'complete', launch_id: complete, response_status: 202, created_at: old, expires_at: old + DAY }).execute();
    const failedOpen = await launch(db, 'failed', old);
    await deadLetter(db, { launchId: failedOpen, status: 'open', at: old });
    const queued = await launch(db, 'queued', old);
    const watched = await launch(db, 'complete', old);
    await watch(db, watched, 'StillWatched', 'active', old);

    clock.advance(60 * DAY);
    expect((await t.service.retention.drain()).launches).toBe(0);
    clock.advance(31 * DAY);
    expect((await t.service.retention.drain()).launches).toBe(1);
    expect(await exists(db, 'launches', 'id', complete)).toBe(false);
    expect(await exists(db, 'launch_steps', 'launch_id', complete)).toBe(false);
    expect(await exists(db, 'idempotency_keys', 'launch_id', complete)).toBe(false);
    for (const kept of [failedOpen, queued, watched]) {
      expect(await exists(db, 'launches', 'id', kept)).toBe(true);
      expect(await exists(db, 'launch_steps', 'launch_id', kept)).toBe(true);
    }
  });

  it('works through a backlog in bounded batches, and two sweepers at once delete each row once', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock });
    const db = t.service.db;
    const done = await launch(db, 'complete', clock.now());
    for (let i = 0; i < 25; i += 1) await event(db, done, clock.now(), [{ status: 'delivered' }]);
    clock.advance(31 * DAY);
    const sweeper = () => createRetention({ db, clock, logger: silentLogger(), retentionMs: 30 * DAY, launchRetentionMs: undefined, batchSize: 10 });
    const [a, b] = [sweeper(), sweeper()];
    const first = await a.runOnce();
    expect(first).toMatchObject({ deleted: { events: 10 }, more: true });
    const [ra, rb] = await Promise.all([a.drain(), b.drain()]);
    expect(ra.events + rb.events).toBe(15);
    expect(await count(db, 'outbox_events')).toBe(0);
    expect(await count(db, 'delivery_attempts')).toBe(0);
  });
});
