import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';
import { execSql } from '../../db/sqlText.js';
import type { ClaimArgs, SendAllowance } from './claimArgs.js';

/**
 * A row the PostgreSQL claim function returns (migration 056): the leased delivery's fields an attempt
 * needs and its context (null where its event or launch is gone), no more.
 */
export interface ClaimedRowPg {
  id: string;
  event_id: string;
  launch_id: string;
  url: string;
  host: string;
  endpoint: string;
  endpoint_id: string | null;
  attempt_count: number;
  lease_token: number;
  ctx_owner: string | null;
  event: string | null;
  sequence: number | null;
  body: string | null;
  request_id: string | null;
  webhook_secret_enc: string | null;
  secret_enc: string | null;
  signature_scheme: 'service' | 'standard' | null;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  rate_limit_per_second: number | null;
  /** Set on the rows with a null id instead: one per endpoint the claim's lanes reach (SendAllowance). */
  host_allowance: number | null;
  endpoint_allowance: number | null;
}

/** A leased delivery as a claim returns it on either database: what its attempt and its settle name. */
export type ClaimedRow = Pick<DeliveryRow, 'id' | 'event_id' | 'launch_id' | 'url' | 'host' | 'endpoint' | 'endpoint_id' | 'attempt_count' | 'lease_token' | 'lease_owner'>;

/**
 * PostgreSQL's ordinary claim in one round trip: `claim_webhook_deliveries` (migration 023) takes the
 * claim lock, counts the live leases, walks the lanes, shares the slots as {@link shareSlots} does,
 * leases the lanes' earliest due deliveries (`FOR UPDATE SKIP LOCKED`) and returns them with their
 * event, owner and sealed secrets, in due, creation and event order; the owner's send allowance at
 * each endpoint its lanes reach (rows with a null id, {@link allowancesOfRows}) goes to
 * `allowances`. Not for half-open trials.
 */
export async function claimWithFunctionPg(db: DbOrTx, args: ClaimArgs, allowances?: SendAllowance[]): Promise<ClaimedRowPg[]> {
  if (args.limit <= 0) return [];
  const { rows } = await execSql<ClaimedRowPg>(db, CLAIM_FUNCTION_PG, claimFunctionParams(args));
  if (allowances) allowancesOfRows(rows, allowances);
  return rows.filter((row) => row.id !== null);
}

/** The claim function's parameters, in its order (also the last of settle_and_claim_webhook_deliveries', migration 024). */
export function claimFunctionParams(args: ClaimArgs): unknown[] {
  const perEndpointCap = args.perEndpointCap ?? args.perHostCap;
  const cappedEndpoints: string[] = [];
  const endpointCaps: number[] = [];
  for (const [endpoint, cap] of args.endpointCaps ?? []) {
    cappedEndpoints.push(endpoint);
    endpointCaps.push(cap);
  }
  const heldOwners: string[] = [];
  const heldCounts: number[] = [];
  for (const [owner, n] of args.ownerHeld ?? []) {
    heldOwners.push(owner);
    heldCounts.push(n);
  }
  const ownerCap = args.perOwnerCap === undefined || !Number.isFinite(args.perOwnerCap) ? null : args.perOwnerCap;
  return [args.owner, args.now, args.leaseMs, args.limit, args.maxAttempts, args.perHostCap, perEndpointCap, cappedEndpoints, endpointCaps, ownerCap, heldOwners, heldCounts, args.excludeEndpoints, args.onlyHost ?? null, args.running ?? [], args.prefetch ?? 0];
}

/** The claim function's parameters as placeholders. */
export const CLAIM_PARAMS_PG = '?, ?, ?, ?, ?, ?, ?, ?::text[], ?::integer[], ?, ?::text[], ?::integer[], ?::text[], ?, ?::text[], ?::integer';
const CLAIM_FUNCTION_PG = `select * from claim_webhook_deliveries(${CLAIM_PARAMS_PG})`;

/** The claim function's allowance rows (id null: one per endpoint its lanes reach), added to `into`. */
export function allowancesOfRows(rows: readonly ClaimedRowPg[], into: SendAllowance[]): void {
  for (const row of rows) {
    if (row.id !== null || row.host_allowance === null || row.endpoint_allowance === null) continue;
    into.push({ host: row.host, endpoint: row.endpoint, hostAllowance: Number(row.host_allowance), endpointAllowance: Number(row.endpoint_allowance) });
  }
}

/** The delivery part of a claimed row (its lease owner is the claim's). */
export function claimedRowOf(row: ClaimedRowPg, owner: string): ClaimedRow {
  return {
    id: row.id,
    event_id: row.event_id,
    launch_id: row.launch_id,
    url: row.url,
    host: row.host,
    endpoint: row.endpoint,
    endpoint_id: row.endpoint_id,
    attempt_count: row.attempt_count,
    lease_token: row.lease_token,
    lease_owner: owner,
  };
}
