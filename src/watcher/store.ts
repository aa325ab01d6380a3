import type { Db, DbOrTx } from '../db/database.js';
import { isPostgres, leaseDeadline, leaseNow } from '../db/dialect.js';
import type { Clock } from '../lib/clock.js';
import { newSortableId } from '../lib/ids.js';
import { parseJson } from '../lib/json.js';
import { ownerStreamKey, recordEvent } from '../webhooks/outbox.js';
import { insertDeadLetter } from '../deadLetters/store.js';

/** What a watch follows: a launch's vesting escrow, its realm, its pool (or a kind a test registers). */
export type WatchKind = string;

export type WatchRow = {
  id: string;
  launch_id: string;
  kind: WatchKind;
  address: string;
  context: string;
  state: 'active' | 'ended';
  cursor: string | null;
  next_check_at: number;
  interval_ms: number;
  cliff_at: number | null;
  last_checked_at: number | null;
  last_activity_at: number | null;
  ends_at: number;
  ended_reason: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  fence: number;
  /** A wake-up since the last claim (a pass in progress may have read history before it), else null. */
  woken_at: number | null;
  created_at: number;
  updated_at: number;
};

type WatchedTables = {
  watches: WatchRow;
  watch_reported: { launch_id: string; signature: string; instruction_index: number; event: string; event_id: string; created_at: number };
};

const tables = (db: DbOrTx) => (db as Db).withTables<WatchedTables>();

/** A watch to create when a launch completes. */
export interface NewWatch {
  kind: WatchKind;
  address: string;
  context: Record<string, unknown>;
  /** When the escrow's cliff passes (ms), for a scheduled check. */
  cliffAt?: number | undefined;
}

/** Inserts the launch's watches (inside the transaction that completes the launch). */
export async function insertWatches(trx: DbOrTx, args: { launchId: string; watches: NewWatch[]; now: number; ttlMs: number; firstIntervalMs?: number }): Promise<void> {
  if (args.watches.length === 0) return;
  await tables(trx)
    .insertInto('watches')
    .values(
      args.watches.map((w) => ({
        id: newSortableId('wch'),
        launch_id: args.launchId,
        kind: w.kind,
        address: w.address,
        context: JSON.stringify(w.context),
        state: 'active' as const,
        cursor: null,
        next_check_at: args.now,
        interval_ms: args.firstIntervalMs ?? 2000,
        cliff_at: w.cliffAt ?? null,
        last_checked_at: null,
        last_activity_at: null,
        ends_at: args.now + args.ttlMs,
        ended_reason: null,
        lease_owner: null,
        lease_expires_at: null,
        fence: 0,
        woken_at: null,
        created_at: args.now,
        updated_at: args.now,
      })),
    )
    .execute();
}

/** A funding wallet's watch does not end (year 9999). */
const NEVER = 253_402_300_799_000;

/**
 * The watch of an owner's funding wallet (kind `funding`, keyed by the owner's own event stream,
 * docs/watcher.md), made with the wallet: insert-if-absent on an id derived from the address.
 */
export async function ensureFundingWatch(trx: DbOrTx, args: { owner: string; address: string; now: number; firstIntervalMs?: number }): Promise<void> {
  await tables(trx)
    .insertInto('watches')
    .values({
      id: `wch_fund_${args.address}`,
      launch_id: ownerStreamKey(args.owner),
      kind: 'funding',
      address: args.address,
      context: '{}',
      state: 'active',
      cursor: null,
      next_check_at: args.now,
      interval_ms: args.firstIntervalMs ?? 2000,
      cliff_at: null,
      last_checked_at: null,
      last_activity_at: null,
      ends_at: NEVER,
      ended_reason: null,
      lease_owner: null,
      lease_expires_at: null,
      fence: 0,
      woken_at: null,
      created_at: args.now,
      updated_at: args.now,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/**
 * Claims up to `limit` due watches with a lease; each claim bumps the watch's fencing token, so a
 * commit by an instance whose lease expired (and was claimed again) is refused. On PostgreSQL the
 * candidates are locked with `FOR UPDATE SKIP LOCKED` and lease deadlines use the database clock.
 * The claim clears `woken_at`: the pass reads history after it, so an earlier wake-up is covered.
 */
export async function claimDueWatches(db: Db, args: { owner: string; now: number; leaseMs: number; limit: number }): Promise<WatchRow[]> {
  return db.transaction().execute(async (trx) => {
    const due = await tables(trx)
      .selectFrom('watches')
      .select('id')
      .where('state', '=', 'active')
      .where('next_check_at', '<=', args.now)
      .where((w) => w.or([w('lease_owner', 'is', null), w('lease_expires_at', '<', leaseNow(trx, args.now))]))
      .orderBy('next_check_at')
      .limit(args.limit)
      // PostgreSQL: another instance's claim in progress is skipped, not waited for (docs/architecture.md, SQLite and PostgreSQL).
      .$if(isPostgres(trx), (q) => q.forUpdate().skipLocked())
      .execute();
    if (due.length === 0) return [];
    return tables(trx)
      .updateTable('watches')
      .set((eb) => ({ lease_owner: args.owner, lease_expires_at: leaseDeadline(trx, args.now, args.leaseMs), fence: eb('fence', '+', 1), woken_at: null }))
      .where('id', 'in', due.map((d) => d.id))
      .returningAll()
      .execute();
  });
}

/** Thrown when a watch's lease was lost (its fencing token moved on): nothing was committed. */
export class WatchFencedError extends Error {
  constructor(watchId: string) {
    super(`watch ${watchId} was claimed by another watcher; nothing committed`);
    this.name = 'WatchFencedError';
  }
}

/** An event a decoder found, with the key it is deduplicated on. */
export interface FoundEvent {
  event: string;
  data: Record<string, unknown>;
  /** The transaction it comes from, or a fixed key (e.g. the proposal address) for state outcomes. */
  signature: string;
  instructionIndex: number;
}

/** A watch's progress to commit atomically: events, new cursor, schedule, maybe its end. */
export interface WatchProgress {
  events: FoundEvent[];
  cursor: string | null;
  nextCheckAt: number;
  intervalMs: number;
  activity: boolean;
  end?: string | undefined;
  /** Clears the scheduled cliff check (it has been reported). */
  clearCliff?: boolean;
  /** Keeps the lease (more history is waiting in this pass), renewed for this long from now. */
  keepLease?: boolean;
  leaseMs?: number | undefined;
  context?: Record<string, unknown> | undefined;
  /** Writes to make in the commit's transaction (after the fence check), returning more events to record with it. */
  apply?: ((trx: DbOrTx, now: number) => Promise<FoundEvent[]>) | undefined;
  /** Transactions of this batch no decoder could read: each recorded once as a `watch` dead letter and skipped. */
  undecodable?: Array<{ signature: string; message: string }> | undefined;
}

/**
 * Commits the events with the cursor in one transaction, through the outbox, under the watch's
 * fencing token. An event already reported for the launch (same signature, instruction, event)
 * is skipped, so a replay after a crash reports nothing twice. Returns the events recorded.
 * A wake-up that landed during the pass (`woken_at`, see {@link wakeWatches}) keeps the next check
 * no later than it: the pass may have read history before that activity.
 */
export async function commitProgress(db: Db, clock: Clock, watch: WatchRow, progress: WatchProgress): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const now = clock.now();
    const updated = await tables(trx)
      .updateTable('watches')
      .set((eb) => ({
        cursor: progress.cursor,
        next_check_at: eb
          .case()
          .when(eb.and([eb('woken_at', 'is not', null), eb('woken_at', '<', progress.nextCheckAt)]))
          .then(eb.ref('woken_at').$notNull())
          .else(progress.nextCheckAt)
          .end(),
        interval_ms: progress.intervalMs,
        last_checked_at: now,
        ...(progress.activity ? { last_activity_at: now } : {}),
        ...(progress.end ? { state: 'ended' as const, ended_reason: progress.end } : {}),
        ...(progress.clearCliff ? { cliff_at: null } : {}),
        ...(progress.context ? { context: JSON.stringify(progress.context) } : {}),
        // A long pass (a backlog of many batches) renews its lease with every batch, so no other
        // watcher takes the watch over while it is still being worked.
        ...(progress.keepLease ? (progress.leaseMs !== undefined ? { lease_expires_at: leaseDeadline(trx, now, progress.leaseMs) } : {}) : { lease_owner: null, lease_expires_at: null, woken_at: null }),
        updated_at: now,
      }))
      .where('id', '=', watch.id)
      .where('fence', '=', watch.fence)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) throw new WatchFencedError(watch.id);
    let recorded = 0;
    const events = progress.apply ? [...progress.events, ...(await progress.apply(trx, now))] : progress.events;
    if (progress.undecodable && progress.undecodable.length > 0) {
      // Under the fence, with the cursor that moves past them: recorded once, however often a pass is replayed.
      const owner = await ownerOfLaunch(trx, watch.launch_id);
      for (const u of progress.undecodable) {
        await insertDeadLetter(trx, { kind: 'watch', owner, launchId: watch.launch_id, step: watch.kind, errorCode: 'undecodable_transaction', errorMessage: `${u.signature}: ${u.message}`.slice(0, 1000), now });
      }
    }
    for (const found of events) {
      const fresh = await tables(trx)
        .insertInto('watch_reported')
        .values({ launch_id: watch.launch_id, signature: found.signature, instruction_index: found.instructionIndex, event: found.event, event_id: '', created_at: now })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (Number(fresh.numInsertedOrUpdatedRows ?? 0n) === 0) continue;
      const event = await recordEvent(trx, clock, { launchId: watch.launch_id, event: found.event, data: found.data });
      await tables(trx)
        .updateTable('watch_reported')
        .set({ event_id: event.eventId })
        .where('launch_id', '=', watch.launch_id)
        .where('signature', '=', found.signature)
        .where('instruction_index', '=', found.instructionIndex)
        .where('event', '=', found.event)
        .execute();
      recorded += 1;
    }
    return recorded;
  });
}

/**
 * A wake-up (the chain saw activity on these addresses): their active watches become due now.
 * Only moves a check earlier; a hint that names an unwatched address changes nothing. A watch
 * leased by a pass in progress is also marked `woken_at`, so that pass's commit (which may have
 * read history before this activity) does not push its next check a full interval away.
 */
export async function wakeWatches(db: Db, addresses: readonly string[], now: number): Promise<number> {
  let woken = 0;
  for (let i = 0; i < addresses.length; i += 500) {
    const chunk = addresses.slice(i, i + 500);
    const result = await tables(db)
      .updateTable('watches')
      .set((eb) => ({
        next_check_at: eb.case().when('next_check_at', '>', now).then(now).else(eb.ref('next_check_at')).end(),
        woken_at: eb.case().when('lease_owner', 'is not', null).then(now).else(eb.ref('woken_at')).end(),
      }))
      .where('state', '=', 'active')
      .where('address', 'in', chunk)
      .where((w) => w.or([w('next_check_at', '>', now), w('lease_owner', 'is not', null)]))
      .executeTakeFirst();
    woken += Number(result.numUpdatedRows);
  }
  return woken;
}

/**
 * Renews the lease of a pass that is still reading (a walk down a long backlog commits nothing until
 * it reaches the oldest page), under the fencing token: refused once another watcher took the watch.
 */
export async function renewWatchLease(db: Db, watch: WatchRow, now: number, leaseMs: number): Promise<void> {
  const updated = await tables(db)
    .updateTable('watches')
    .set({ lease_expires_at: leaseDeadline(db, now, leaseMs) })
    .where('id', '=', watch.id)
    .where('fence', '=', watch.fence)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) throw new WatchFencedError(watch.id);
}

/** Gives a watch back without progress (a failed pass), next check after `retryAt`. */
export async function releaseWatch(db: Db, watch: WatchRow, retryAt: number): Promise<void> {
  await tables(db)
    .updateTable('watches')
    .set({ lease_owner: null, lease_expires_at: null, next_check_at: retryAt })
    .where('id', '=', watch.id)
    .where('fence', '=', watch.fence)
    .execute();
}

/** The API view of a launch's watches (docs/watcher.md: each watch, its cursor and last activity). */
export async function listWatches(db: DbOrTx, launchId: string): Promise<Array<Record<string, unknown>>> {
  const rows = await tables(db).selectFrom('watches').selectAll().where('launch_id', '=', launchId).orderBy('created_at').orderBy('kind').orderBy('id').execute();
  const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
  return rows.map((w) => ({
    kind: w.kind,
    address: w.address,
    state: w.state,
    cursor: w.cursor,
    nextCheckAt: w.state === 'active' ? iso(w.next_check_at) : null,
    lastCheckedAt: iso(w.last_checked_at),
    lastActivityAt: iso(w.last_activity_at),
    cliffAt: iso(w.cliff_at),
    endsAt: iso(w.ends_at),
    endedReason: w.ended_reason,
  }));
}

/** The parsed context of a watch. */
export const watchContext = (watch: WatchRow): Record<string, unknown> => parseJson<Record<string, unknown>>(watch.context, {});

/** The owner of a launch, or of an owner's own stream (`own_<owner>`: its funding wallet's watch). */
async function ownerOfLaunch(trx: DbOrTx, launchId: string): Promise<string> {
  if (launchId.startsWith('own_')) return launchId.slice(4);
  const row = await trx.selectFrom('launches').select('owner').where('id', '=', launchId).executeTakeFirst();
  return row?.owner ?? '';
}
