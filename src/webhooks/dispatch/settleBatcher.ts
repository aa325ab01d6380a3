import type { SettleInput, SettleResult } from '../settle.js';

/** A finished attempt waiting to be settled with the next turn. */
export interface PendingSettle {
  input: SettleInput;
  /** Its endpoint orders each launch's events: once settled, the launch's next may be claimable. */
  ordered: boolean;
  resolve(result: SettleResult): void;
  reject(error: unknown): void;
}

export interface SettleBatcherDeps {
  /** Some attempt sent moments ago is still out (LocalQueue.youngOut): finished ones wait for it a little. */
  youngOut(): boolean;
  /** Stopping: settle at once. */
  stopping(): boolean;
  /** Runs a turn that takes the batch (and, while running, claims). */
  flush(): void;
}

/** Settles at most this many attempts per transaction. */
export const MAX_SETTLE_BATCH = 64;
/** The longest a finished attempt waits for others to be settled with. */
export const FLUSH_WAIT_MS = 2;

/**
 * The settle batcher. Attempts that finished are settled together (and, while running, with the
 * next claim) on the next turn of the event loop once no attempt sent in the last YOUNG_MS is
 * still out, or after {@link FLUSH_WAIT_MS}: a turn's begin, lane walk and commit cost the same for
 * one row as for eight, so a fast receiver's answers, which arrive within a few ms of each other,
 * share one. An attempt out longer than that (a slow or dead receiver) does not hold the others'
 * turn: one customer's hanging endpoint must not slow another's deliveries.
 * (Settling once half of what was out had finished kept a fast receiver busy meanwhile, but on one
 * event loop that overlap bought less than the turns it doubled: 15 000 deliveries to one host,
 * three rounds alternating, 2120/2363/3060 -> 2252/2526/3220 per s.)
 */
export interface SettleBatcher {
  /** Queues a finished attempt; resolves with its settle's result. */
  settle(input: SettleInput, ordered: boolean): Promise<SettleResult>;
  /** The next batch (at most MAX_SETTLE_BATCH), taken; a flush is scheduled for what is left. */
  take(): PendingSettle[];
  /** Attempts waiting to be settled. */
  pending(): number;
}

export function createSettleBatcher(deps: SettleBatcherDeps): SettleBatcher {
  const settles: PendingSettle[] = [];
  let flushScheduled = false;
  let flushTimer: NodeJS.Timeout | undefined;

  function schedule(): void {
    if (flushScheduled) return;
    if (!deps.stopping() && deps.youngOut()) {
      flushTimer ??= setTimeout(() => {
        flushTimer = undefined;
        schedule();
        if (!flushScheduled) flushNow();
      }, FLUSH_WAIT_MS);
      return;
    }
    flushNow();
  }

  function flushNow(): void {
    flushScheduled = true;
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = undefined;
    setImmediate(() => {
      flushScheduled = false;
      deps.flush();
    });
  }

  return {
    settle(input, ordered) {
      return new Promise<SettleResult>((resolve, reject) => {
        settles.push({ input, ordered, resolve, reject });
        schedule();
      });
    },
    take() {
      const batch = settles.splice(0, MAX_SETTLE_BATCH);
      if (settles.length > 0) schedule();
      return batch;
    },
    pending: () => settles.length,
  };
}
