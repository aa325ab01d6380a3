import type { Db, DbOrTx } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { parseJson } from '../lib/json.js';
import { createPollLoop, type PollLoop } from '../lib/pollLoop.js';
import type { FeeClaims } from './feeClaims.js';

/** A launch whose creator fees are claimed by the service itself (migration 050). */
export type AutoClaimRow = {
  launch_id: string;
  owner: string;
  min_lamports: string;
  next_check_at: number;
  checked_by: string | null;
  last_claim_id: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
};

type Tables = { fee_auto_claims: AutoClaimRow };
const tables = (db: DbOrTx) => (db as Db).withTables<Tables>();

/**
 * In the transaction that completes a launch: its auto-claim row, when it is a bonding curve whose
 * request set `fees.autoClaimMinLamports` (nothing for other launches).
 */
export async function insertAutoClaimFor(trx: DbOrTx, launchId: string, results: Record<string, unknown>, now: number): Promise<void> {
  if ((results.pool as { kind?: unknown } | undefined)?.kind !== 'bonding-curve') return;
  const launch = await trx.selectFrom('launches').select(['owner', 'request']).where('id', '=', launchId).executeTakeFirstOrThrow();
  const min = parseJson<{ fees?: { autoClaimMinLamports?: unknown } }>(launch.request, {}).fees?.autoClaimMinLamports;
  if (typeof min !== 'string') return;
  await tables(trx)
    .insertInto('fee_auto_claims')
    .values({ launch_id: launchId, owner: launch.owner, min_lamports: min, next_check_at: now, checked_by: null, last_claim_id: null, last_error: null, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('launch_id').doNothing())
    .execute();
}

export interface AutoClaimerOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  fees: Pick<FeeClaims, 'autoClaim'>;
  /** How often each launch's claimable SOL is read (FEE_AUTO_CLAIM_INTERVAL). */
  intervalMs: number;
  /** How many launches one turn checks at most. */
  batch?: number;
}

/**
 * The auto-claim job (docs/funding.md, "Auto-claim"), one per instance: every `intervalMs` it reads
 * each auto-claim launch's claimable SOL (the curve's creator fee before graduation, the curve's and
 * the DAMM v2 position's after) and, once it reaches the launch's `autoClaimMinLamports`, claims
 * through the same use case as `POST /fees/claim` (origin `auto`). An instance takes a launch's
 * check by moving its `next_check_at` forward in a conditional update, so instances share the work;
 * the claim's running slot (one running claim per launch, fenced) and the minimum checked again
 * once the claim holds it keep a crossing to one claim, whatever instances race.
 */
export class AutoClaimer {
  readonly id = newId('acl', 6);
  private readonly loop: PollLoop;
  /** Claims this job made (tests read it). */
  claimed = 0;

  constructor(private readonly options: AutoClaimerOptions) {
    // Checks are due per launch (`next_check_at`); a turn a second finds them.
    this.loop = createPollLoop({ logger: options.logger, what: 'auto-claiming fees', intervalMs: Math.min(options.intervalMs, 1_000), turn: async () => (await this.runOnce(), false) });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Checks every launch whose check is due (taking each one first); resolves with how many it checked. */
  async runOnce(): Promise<number> {
    const { db, clock, intervalMs } = this.options;
    const now = clock.now();
    const due = await tables(db).selectFrom('fee_auto_claims').selectAll().where('next_check_at', '<=', now).orderBy('next_check_at').limit(this.options.batch ?? 20).execute();
    let checked = 0;
    for (const row of due) {
      const taken = await tables(db)
        .updateTable('fee_auto_claims')
        .set({ next_check_at: now + intervalMs, checked_by: this.id, updated_at: now })
        .where('launch_id', '=', row.launch_id)
        .where('next_check_at', '=', row.next_check_at)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 0) continue;
      checked += 1;
      await this.check(row);
    }
    return checked;
  }

  private async check(row: AutoClaimRow): Promise<void> {
    const { db, clock } = this.options;
    const logger = this.options.logger.child({ launchId: row.launch_id });
    try {
      const claim = await this.options.fees.autoClaim(row.owner, row.launch_id, BigInt(row.min_lamports));
      if (!claim) return;
      this.claimed += 1;
      logger.info({ claim: claim.id, amounts: claim.amounts }, 'creator fees auto-claimed');
      await tables(db).updateTable('fee_auto_claims').set({ last_claim_id: claim.id, last_error: null, updated_at: clock.now() }).where('launch_id', '=', row.launch_id).execute();
    } catch (error) {
      // Another claim of the launch is running: it is that claim's turn; look again at the next check.
      if (error instanceof ConflictError) return;
      const message = error instanceof Error ? error.message : String(error);
      logger.warn({ err: error }, 'auto-claim failed; trying again at the next check');
      await tables(db).updateTable('fee_auto_claims').set({ last_error: message.slice(0, 1000), updated_at: clock.now() }).where('launch_id', '=', row.launch_id).execute();
    }
  }
}
