import { sql } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import { isPostgres } from '../../db/dialect.js';
import type { BreakerState, BreakerStateName } from '../breakerState.js';

/** One endpoint's breaker as stored: its state, the version of that state and the half-open trial lease. */
export interface StoredBreaker {
  state: BreakerState;
  /** Bumped by every state change (compare-and-set); -1 for a breaker with no row yet. */
  version: number;
  trialOwner: string | null;
  trialUntil: number | null;
}

const breakerColumns = ['endpoint', 'state', 'failures', 'opened_at', 'version', 'trial_owner', 'trial_until'] as const;

function stored(r: { state: string; failures: number; opened_at: number | null; version: number; trial_owner: string | null; trial_until: number | null }): StoredBreaker {
  return {
    state: { state: r.state as BreakerStateName, failures: r.failures, openedAt: r.opened_at },
    version: r.version,
    trialOwner: r.trial_owner,
    trialUntil: r.trial_until,
  };
}

/** The database server's clock, in ms (PostgreSQL's `clock_timestamp()`; on SQLite, this process's). */
export async function databaseNow(db: DbOrTx): Promise<number> {
  if (!isPostgres(db)) return Date.now();
  const { rows } = await sql<{ ms: string }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint as ms`.execute(db);
  return Number(rows[0]!.ms);
}

/** Every persisted breaker, by endpoint key. */
export async function loadBreakers(db: DbOrTx): Promise<Map<string, StoredBreaker>> {
  const rows = await db.selectFrom('endpoint_breakers').select(breakerColumns).execute();
  return new Map(rows.map((r) => [r.endpoint, stored(r)]));
}

/** The persisted breaker of one endpoint, if any. */
export async function loadBreaker(db: DbOrTx, endpoint: string): Promise<StoredBreaker | undefined> {
  const row = await db.selectFrom('endpoint_breakers').select(breakerColumns).where('endpoint', '=', endpoint).executeTakeFirst();
  return row && stored(row);
}

/**
 * Writes `next` as the breaker of `endpoint` if its stored version is still `version` (-1: no row
 * yet), clearing the trial lease. Returns the new version, or undefined when another instance changed
 * it first (the caller reloads and decides again).
 */
export async function compareAndSetBreaker(db: DbOrTx, args: { endpoint: string; host: string; version: number; next: BreakerState; now: number }): Promise<number | undefined> {
  const { endpoint, host, version, next, now } = args;
  const values = { state: next.state, failures: next.failures, opened_at: next.openedAt, updated_at: now, trial_owner: null, trial_until: null };
  if (version < 0) {
    const row = await db
      .insertInto('endpoint_breakers')
      .values({ endpoint, host, ...values, version: 1 })
      .onConflict((oc) => oc.column('endpoint').doNothing())
      .returning('version')
      .executeTakeFirst();
    return row?.version;
  }
  const row = await db
    .updateTable('endpoint_breakers')
    .set({ ...values, version: version + 1 })
    .where('endpoint', '=', endpoint)
    .where('version', '=', version)
    .returning('version')
    .executeTakeFirst();
  return row?.version;
}

/**
 * Takes the half-open trial lease of `endpoint` for `owner` until `until`, if the breaker is half-open
 * in the state this instance saw (`version`) and no other instance holds a live lease. True when taken.
 */
export async function claimBreakerTrial(db: DbOrTx, args: { endpoint: string; version: number; owner: string; now: number; until: number }): Promise<boolean> {
  const row = await db
    .updateTable('endpoint_breakers')
    .set({ trial_owner: args.owner, trial_until: args.until })
    .where('endpoint', '=', args.endpoint)
    .where('version', '=', args.version)
    .where('state', '=', 'half-open')
    .where((eb) => eb.or([eb('trial_owner', 'is', null), eb('trial_owner', '=', args.owner), eb('trial_until', '<=', args.now)]))
    .returning('version')
    .executeTakeFirst();
  return row !== undefined;
}

/** Writes the breaker of `endpoint` whatever its version (seeding a state: benchmarks, tests). */
export async function saveBreakerState(db: DbOrTx, endpoint: string, host: string, s: BreakerState, now: number): Promise<void> {
  const values = { state: s.state, failures: s.failures, opened_at: s.openedAt, updated_at: now, trial_owner: null, trial_until: null };
  await db
    .insertInto('endpoint_breakers')
    .values({ endpoint, host, ...values, version: 1 })
    .onConflict((oc) => oc.column('endpoint').doUpdateSet((eb) => ({ ...values, version: eb('endpoint_breakers.version', '+', 1) })))
    .execute();
}

/** Pending deliveries per endpoint (what a breaker holds back while open). */
export async function pendingByEndpoint(db: DbOrTx): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('deliveries')
    .select((eb) => ['endpoint', eb.fn.countAll<number>().as('n')])
    .where('status', '=', 'pending')
    .groupBy('endpoint')
    .execute();
  return new Map(rows.map((r) => [r.endpoint, Number(r.n)]));
}
