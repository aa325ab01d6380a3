import type { Db } from '../db/database.js';
import { settleAttempt, settleAttemptsIn, type SettleInput, type SettleResult } from './settle.js';
import type { ClaimArgs } from './sql/claimDeliveries.js';
import { claimDeliveryWork, type ClaimedDelivery } from './sql/claimWork.js';
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
    return await db.transaction().execute(async (trx) => {
      const results = input.settles.length > 0 ? await settleAttemptsIn(trx, input.settles) : [];
      const offered = input.offers ? await leaseOffered(trx, input.offers) : { claimed: [], left: 0 };
      const spent = input.failSpent ? await failSpentDeliveriesIn(trx, input.failSpent) : [];
      const claimed: ClaimedDelivery[][] = [];
      for (const claim of claims) claimed.push(await claimDeliveryWork(trx, claim));
      return { results, spent, claimed, adopted: offered.claimed, offersLeft: offered.left };
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
    return { results, spent: [], claimed: claims.map(() => []), adopted: [], offersLeft: 0, error };
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
