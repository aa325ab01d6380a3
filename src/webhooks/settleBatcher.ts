import type { Db } from '../db/database.js';
import { settleAttemptIn, type SettleInput, type SettleResult } from './settle.js';

/** Settles attempts in shared transactions. */
export interface SettleBatcher {
  settle(input: SettleInput): Promise<SettleResult>;
}

interface Queued {
  input: SettleInput;
  resolve(result: SettleResult): void;
  reject(error: unknown): void;
}

/**
 * Attempts that finish in the same turn of the event loop are settled in one transaction: each
 * keeps its own writes and lease check, but they share one commit, which is most of the cost of a
 * settle. When that transaction fails, each attempt of the batch is settled again in a transaction
 * of its own, so one poisoned item fails alone and its neighbours keep their state and attempt
 * log. An item that fails alone stays leased and unsettled: its lease expires and the delivery is
 * claimed again, or failed and dead-lettered if that was its last attempt.
 */
export function createSettleBatcher(db: Db, maxBatch = 64): SettleBatcher {
  const queue: Queued[] = [];
  let scheduled = false;

  async function flush(): Promise<void> {
    scheduled = false;
    const batch = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
    try {
      const results = await db.transaction().execute(async (trx) => {
        const out: SettleResult[] = [];
        for (const item of batch) out.push(await settleAttemptIn(trx, item.input));
        return out;
      });
      batch.forEach((item, i) => item.resolve(results[i] ?? 'lease_lost'));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.reject(error);
        return;
      }
      for (const item of batch) {
        try {
          item.resolve(await db.transaction().execute((trx) => settleAttemptIn(trx, item.input)));
        } catch (alone) {
          item.reject(alone);
        }
      }
    }
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void flush());
  }

  return {
    settle(input) {
      return new Promise<SettleResult>((resolve, reject) => {
        queue.push({ input, resolve, reject });
        schedule();
      });
    },
  };
}
