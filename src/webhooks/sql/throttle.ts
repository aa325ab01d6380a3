import type { DbOrTx } from '../../db/database.js';
import { execSql } from '../../db/sqlText.js';
import { isPostgres } from '../../db/dialect.js';

/**
 * Per-endpoint throttle (docs/webhooks.md, "Throttle"): an endpoint with `rate_limit_per_second` R
 * gets one send slot every RATE_WINDOW_MS / R ms, so at most R attempts start in any second, with
 * 200 ms of that window left for the jitter between our start and the receiver's clock (1.1 s
 * until migration 041: 100 ms proved too little for a receiver on a loaded machine). The claim
 * leases at most one delivery of a throttled endpoint whose slot has come and moves the slot on;
 * the others stay pending (no attempt counted, no breaker effect). PostgreSQL's claim function does
 * the same with the same constant (migration 040 with 1.1 s, 041 and 045 with 1.2 s: 045 makes the
 * function anew for databases that ran 041 while it still said 1.1 s).
 */
export const RATE_WINDOW_MS = 1_200;

/** The time between two send slots of an endpoint throttled to `rate` a second. */
export function slotSpacingMs(rate: number): number {
  return Math.ceil(RATE_WINDOW_MS / rate);
}

export interface ThrottledEndpoint {
  rate: number;
  /** Whether its slot has come (its next delivery may be leased now). */
  open: boolean;
}

/** Every throttled endpoint with whether its slot has come at `now` (the partial index of migration 040). SQLite's claim; PostgreSQL's is in its claim function. */
export async function throttledEndpoints(db: DbOrTx, now: number): Promise<Map<string, ThrottledEndpoint>> {
  const { rows } = await execSql<{ id: string; rate: number; next_at: number | null }>(db, THROTTLED_TEXT, []);
  const out = new Map<string, ThrottledEndpoint>();
  for (const r of rows) out.set(r.id, { rate: Number(r.rate), open: r.next_at === null || Number(r.next_at) <= now });
  return out;
}

const THROTTLED_TEXT = `select id, rate_limit_per_second as rate, rate_next_at as next_at from webhook_endpoints where rate_limit_per_second is not null`;

/** Moves each endpoint's next send slot one spacing past `now` (it was given a delivery at `now`). */
export async function takeSlots(db: DbOrTx, now: number, taken: ReadonlyMap<string, number>): Promise<void> {
  for (const [id, rate] of taken) await execSql(db, TAKE_TEXT, [now + slotSpacingMs(rate), id]);
}

const TAKE_TEXT = `update webhook_endpoints set rate_next_at = ? where id = ?`;

/**
 * The delivery `y` is not held by its endpoint's throttle: no endpoint, an endpoint without a rate,
 * or one whose send slot has come (the half-open trial's claim, which the throttle's claims above do
 * not serve). SQLite: `?` is the lease clock, bound last; PostgreSQL: the database's clock, as in the
 * claim function.
 */
export function throttleOpenCondition(pg: boolean): string {
  return `(y.endpoint_id is null or not exists (select 1 from webhook_endpoints w
          where w.id = y.endpoint_id and w.rate_limit_per_second is not null and w.rate_next_at > ${pg ? '(extract(epoch from now()) * 1000)::bigint' : '?'}))`;
}

/** Moves a throttled endpoint's next send slot one spacing past now (nothing for an endpoint without a rate). */
export async function takeSlotOf(db: DbOrTx, now: number, endpointId: string): Promise<void> {
  if (isPostgres(db)) await execSql(db, TAKE_ONE_PG, [endpointId]);
  else await execSql(db, TAKE_ONE_SQLITE, [now, RATE_WINDOW_MS, endpointId]);
}

const TAKE_ONE_PG = `update webhook_endpoints set rate_next_at = (extract(epoch from now()) * 1000)::bigint + ceil(${RATE_WINDOW_MS}.0 / rate_limit_per_second)::bigint
    where id = ? and rate_limit_per_second is not null`;
const TAKE_ONE_SQLITE = `update webhook_endpoints set rate_next_at = ? + (? + rate_limit_per_second - 1) / rate_limit_per_second
    where id = ? and rate_limit_per_second is not null`;
