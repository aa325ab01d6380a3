import type { OwnerLimits } from '../config/config.js';
import type { AliasableExpression, ExpressionBuilder } from 'kysely';
import type { DbOrTx } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { lockBound } from '../db/dialect.js';

/** One of the owner bounds (docs/architecture.md, "Limits and fairness"). */
export type OwnerBound = keyof OwnerLimits;

/** An admin's overrides of one owner's bounds; `null` is the service's default for that bound. */
export type BoundOverrides = { [K in OwnerBound]: number | null };

export const OWNER_BOUNDS: readonly OwnerBound[] = ['endpoints', 'launchesInFlight', 'redeliveries'];

const COLUMN = { endpoints: 'max_endpoints', launchesInFlight: 'max_launches_in_flight', redeliveries: 'max_redeliveries' } as const satisfies Record<OwnerBound, string>;

const NONE: BoundOverrides = { endpoints: null, launchesInFlight: null, redeliveries: null };

/**
 * The bound that holds for `owner`: its override, else `fallback` (the configured default). One
 * read of one row by its primary key, inside the caller's transaction so the check that uses it
 * sees the same state as its count.
 */
export async function ownerBound(db: DbOrTx, owner: string, bound: OwnerBound, fallback: number): Promise<number> {
  const row = await db.selectFrom('owner_bounds').select(COLUMN[bound]).where('owner', '=', owner).executeTakeFirst();
  const value = row?.[COLUMN[bound]];
  return value === null || value === undefined ? fallback : Number(value);
}

/** The owner's override of `bound` as a scalar subquery (null: none), to read with a count in one statement. */
export function boundOverride(eb: ExpressionBuilder<Database, keyof Database>, owner: string, bound: OwnerBound): AliasableExpression<number | null> {
  return eb.selectFrom('owner_bounds').select(`owner_bounds.${COLUMN[bound]}` as const).where('owner_bounds.owner', '=', owner) as unknown as AliasableExpression<number | null>;
}

/** The owner's overrides (all `null` when it has none). */
export async function readBoundOverrides(db: DbOrTx, owner: string): Promise<BoundOverrides> {
  const row = await db.selectFrom('owner_bounds').selectAll().where('owner', '=', owner).executeTakeFirst();
  if (!row) return { ...NONE };
  const n = (v: number | null) => (v === null ? null : Number(v));
  return { endpoints: n(row.max_endpoints), launchesInFlight: n(row.max_launches_in_flight), redeliveries: n(row.max_redeliveries) };
}

/**
 * Sets the given overrides (`null` clears one; the others stay) and returns them all. An owner left
 * with none has no row. Needs only the database, so `npm run keys -- bounds` shares it with the API.
 */
export async function writeBoundOverrides(db: DbOrTx, owner: string, patch: Partial<BoundOverrides>, now: number): Promise<BoundOverrides> {
  const write = async (trx: DbOrTx) => {
    // Two admins setting different bounds of one owner at once on PostgreSQL: neither loses the other's.
    await lockBound(trx, `owner_bounds:${owner}`);
    const next = { ...(await readBoundOverrides(trx, owner)), ...patch };
    if (OWNER_BOUNDS.every((b) => next[b] === null)) {
      await trx.deleteFrom('owner_bounds').where('owner', '=', owner).execute();
      return next;
    }
    const values = { max_endpoints: next.endpoints, max_launches_in_flight: next.launchesInFlight, max_redeliveries: next.redeliveries, updated_at: now };
    await trx
      .insertInto('owner_bounds')
      .values({ owner, ...values })
      .onConflict((oc) => oc.column('owner').doUpdateSet(values))
      .execute();
    return next;
  };
  return db.isTransaction ? write(db) : db.transaction().execute(write);
}

/** The bounds that hold for an owner: each override, else the default. */
export function effectiveBounds(defaults: OwnerLimits, overrides: BoundOverrides): OwnerLimits {
  return {
    endpoints: overrides.endpoints ?? defaults.endpoints,
    launchesInFlight: overrides.launchesInFlight ?? defaults.launchesInFlight,
    redeliveries: overrides.redeliveries ?? defaults.redeliveries,
  };
}
