import type { Db } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import { execSql } from '../db/sqlText.js';
import { newSortableId } from '../lib/ids.js';
import { attemptRow, settleAttempt, settleAttemptsIn, type SettleInput, type SettleResult } from './settle.js';
import { CLAIM_PARAMS_PG, claimFunctionParams, type ClaimArgs, type ClaimedRowPg, type SendAllowance } from './sql/claimDeliveries.js';
import { allowancesOfRows } from './sql/claimFunctionPg.js';
import { claimDeliveryWork, claimedOfRows, type ClaimedDelivery, type DeliveryOffer } from './sql/claimWork.js';
import { failSpentDeliveriesIn, type SpentArgs, type SpentDelivery } from './sql/failSpentDeliveries.js';
import { leaseOffered, type LeaseOfferedArgs } from './sql/leaseOffered.js';

/** One write transaction of the dispatcher: what to settle, then what to lease, fail and claim. */
export interface SettleAndClaimInput {
  /** Finished attempts to settle, each under its own lease (owner and fencing token). */
  settles: readonly SettleInput[];
  /** Deliveries whose attempts are spent and whose lease expired: failed and dead-lettered first. */
  failSpent?: SpentArgs;
  /** Deliveries just committed by this process, leased by id after the settles (SQLite; see leaseOffered). */
  offers?: LeaseOfferedArgs;
  /** Claims, run in order after the settles (so the slots those settles free count): half-open trials, then the ordinary claim. */
  claims?: readonly ClaimArgs[];
}

export interface SettleAndClaimOutput {
  /** Per settle, in order: its result, or the error that kept it from settling even alone. */
  results: Array<SettleResult | Error>;
  spent: SpentDelivery[];
  /** Per claim, in order: what it claimed (empty for every claim when the shared transaction failed). */
  claimed: ClaimedDelivery[][];
  /** The offers leased (none when the shared transaction failed). */
  adopted: ClaimedDelivery[];
  /** Offers left pending for want of a slot or a closed breaker. */
  offersLeft: number;
  /** The offers among those left that only wanted a slot, in order (LeaseOfferedResult.waiting). */
  offersWaiting: DeliveryOffer[];
  /** What this owner may send at once per host and endpoint, as the claims counted it (none when the shared transaction failed). */
  allowances: SendAllowance[];
  /** Why the shared transaction failed (the settles were then retried one by one, nothing was claimed). */
  error?: unknown;
}

/**
 * Settles many attempts and claims the next work in one transaction, so a turn of the dispatcher
 * costs one commit however many attempts finished in it. Every settle keeps its own fenced update
 * and attempt row; the attempt rows go in one insert. When the shared transaction fails, each
 * settle is tried again in a transaction of its own, so one poisoned item fails alone while its
 * neighbours keep their state and attempt log; an item that fails alone stays leased and unsettled
 * (its lease expires and it is claimed again, or failed and dead-lettered when that was its last
 * attempt). Nothing is claimed then; the caller claims again on its next turn.
 */
export async function settleAndClaim(db: Db, input: SettleAndClaimInput): Promise<SettleAndClaimOutput> {
  const claims = input.claims ?? [];
  try {
    if (isPostgres(db) && oneRoundTrip(input, claims)) return await settleAndClaimPg(db, input.settles, claims[0]);
    return await db.transaction().execute(async (trx) => {
      const results = input.settles.length > 0 ? await settleAttemptsIn(trx, input.settles) : [];
      const offered = input.offers ? await leaseOffered(trx, input.offers) : { claimed: [], left: 0, waiting: [] };
      const spent = input.failSpent ? await failSpentDeliveriesIn(trx, input.failSpent) : [];
      const claimed: ClaimedDelivery[][] = [];
      const allowances: SendAllowance[] = [];
      for (const claim of claims) claimed.push(await claimDeliveryWork(trx, claim, allowances));
      return { results, spent, claimed, adopted: offered.claimed, offersLeft: offered.left, offersWaiting: offered.waiting, allowances };
    });
  } catch (error) {
    const results: Array<SettleResult | Error> = [];
    for (const settle of input.settles) {
      try {
        results.push(await settleAttempt(db, settle));
      } catch (alone) {
        results.push(toError(alone));
      }
    }
    return { results, spent: [], claimed: claims.map(() => []), adopted: [], offersLeft: 0, offersWaiting: [], allowances: [], error };
  }
}

/**
 * PostgreSQL, a turn whose finished attempts all succeeded (most turns), with no offers, no spent
 * deliveries to fail and at most the ordinary claim: the settles and the claim in one statement,
 * `settle_and_claim_webhook_deliveries` (migration 024), which does what settleAttemptsIn and
 * claimDeliveryWork do in one transaction. Other turns take the transaction below.
 */
function oneRoundTrip(input: SettleAndClaimInput, claims: readonly ClaimArgs[]): boolean {
  if (input.offers || input.failSpent || claims.length > 1 || claims[0]?.onlyEndpoint !== undefined) return false;
  const ids = new Set<string>();
  for (const settle of input.settles) {
    if (!settle.outcome.ok || ids.has(settle.delivery.id)) return false;
    ids.add(settle.delivery.id);
  }
  return true;
}

const NO_CLAIM: ClaimArgs = { owner: '', now: 0, leaseMs: 0, limit: 0, perHostCap: 0, excludeEndpoints: [], maxAttempts: 0 };

type TurnRow = ClaimedRowPg & { delivered: string[]; canceled: string[] };

async function settleAndClaimPg(db: Db, settles: readonly SettleInput[], claim: ClaimArgs | undefined): Promise<SettleAndClaimOutput> {
  // The function's settle parameters, one array per column (column-wise: no row array per settle).
  const n = settles.length;
  const s = Array.from({ length: 14 }, () => new Array<unknown>(n));
  for (let i = 0; i < n; i++) {
    const input = settles[i]!;
    const row = attemptRow(input);
    s[0]![i] = input.delivery.id;
    s[1]![i] = input.owner;
    s[2]![i] = input.delivery.lease_token;
    s[3]![i] = row.status_code;
    s[4]![i] = input.now;
    s[5]![i] = input.endpointId ?? null;
    s[6]![i] = newSortableId('att');
    s[7]![i] = row.attempt;
    s[8]![i] = row.started_at;
    s[9]![i] = row.duration_ms;
    s[10]![i] = row.outcome;
    s[11]![i] = row.error_class;
    s[12]![i] = row.error_message;
    s[13]![i] = row.response_body;
  }
  const { rows } = await execSql<TurnRow>(db, TURN_PG, [...s, ...claimFunctionParams(claim ?? NO_CLAIM)]);
  const delivered = new Set(rows[0]?.delivered ?? []);
  const canceled = new Set(rows[0]?.canceled ?? []);
  const results = settles.map((input): SettleResult => (delivered.has(input.delivery.id) ? 'delivered' : canceled.has(input.delivery.id) ? 'canceled' : 'lease_lost'));
  const allowances: SendAllowance[] = [];
  allowancesOfRows(rows, allowances);
  return { results, spent: [], claimed: claim ? [claimedOfRows(rows, claim)] : [], adopted: [], offersLeft: 0, offersWaiting: [], allowances };
}

const TURN_PG = `select * from settle_and_claim_webhook_deliveries(?::text[], ?::text[], ?::integer[], ?::integer[], ?::bigint[], ?::text[],
    ?::text[], ?::integer[], ?::bigint[], ?::integer[], ?::text[], ?::text[], ?::text[], ?::text[], ${CLAIM_PARAMS_PG})`;

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
