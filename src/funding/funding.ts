import { PublicKey } from '@solana/web3.js';
import type { Logger } from 'pino';
import type { ChainBackend } from '../chain/backend.js';
import type { LaunchPlan, StepName } from '../chain/steps/types.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db, DbOrTx } from '../db/database.js';
import type { FundingWalletRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { InsufficientFundsError, LimitExceededError, NotFoundError } from '../lib/errors.js';
import { closeReservation, dayUsage, insertEntry, insertSpendOnce, reservedLamports } from './ledger.js';
import { launchCosts, presentQuote, type LaunchQuote } from './quote.js';
import { limitsOf, readLimits, writeLimits, type FundingLimits } from './limits.js';
import { ensureWallet, findPayer, lockWallet, ownerKnown, walletSeed } from './wallets.js';
import { withdrawFunds, type Withdrawal } from './withdraw.js';

export { limitsOf, type FundingLimits, type Withdrawal };

/** Spends recorded this recently may not show in a balance read just before: not subtracted (ledger.ts). */
const SPEND_SETTLE_MS = 5_000;

export interface FundingDeps {
  db: Db;
  chain: ChainBackend;
  secretBox: SecretBox;
  clock: Clock;
  logger: Logger;
  /** Lamports airdropped to a new wallet from the chain's faucet (outside production only); 0 for none. */
  devAirdropLamports: number;
  /** A create was refused for its funds or a limit (counted by `/metrics`). */
  onRefused?(reason: 'insufficient_funds' | 'funding_limit_exceeded'): void;
  /** Runs in the transaction that makes an owner's wallet (the composition root creates its deposit watch). */
  onWalletCreated?(trx: DbOrTx, wallet: FundingWalletRow): Promise<void>;
  /** Runs in the transaction that records a withdrawal (the composition root emits `funding.withdrawn`). */
  onWithdrawn?(trx: DbOrTx, withdrawal: { owner: string; address: string; to: string; lamports: bigint; signature: string }): Promise<void>;
  /** Called after a transaction that ran `onWithdrawn` has committed (wakes the dispatcher). */
  afterCommit?(): void;
}

/** What a create checked before its transaction: the wallet, the quote's total and the balance read. */
export interface PreparedReservation {
  wallet: FundingWalletRow;
  totalLamports: bigint;
  balanceLamports: bigint;
  /** When the balance was read (spends recorded after it are not subtracted). */
  readAt: number;
}

export type Funding = ReturnType<typeof createFunding>;

const DAY_MS = 86_400_000;
const dayStartOf = (now: number) => Math.floor(now / DAY_MS) * DAY_MS;
const iso = (ms: number) => new Date(ms).toISOString();
const amount = (value: bigint | null) => (value === null ? null : String(value));
const max0 = (value: bigint) => (value > 0n ? value : 0n);

/**
 * Every owner pays for its own launches (docs/funding.md): the owner's wallet, its quote, the
 * reservation a launch makes in its own transaction, what each step spends and the release at the
 * end, and the owner's limits. The chain is the truth of what a wallet holds; the ledger says what
 * of it is spoken for.
 */
/** Opened wallet seeds `payerFor` keeps (see `seeds` in {@link createFunding}). */
const SEEDS_KEPT = 1024;

export function createFunding(deps: FundingDeps) {
  const { db, chain, clock } = deps;
  const log = deps.logger.child({ component: 'funding' });
  /**
   * Opened seeds by their sealed text: `payerFor` runs on every step of every owner-funded launch,
   * and the sealed text of a wallet changes only when SECRET_KEY rotates (a new text, a new entry).
   * Bounded: cleared whole past {@link SEEDS_KEPT} wallets. Each caller gets a copy.
   */
  const seeds = new Map<string, Uint8Array>();
  const seedOf = (row: Pick<FundingWalletRow, 'seed_enc' | 'address'>): Uint8Array => {
    let seed = seeds.get(row.seed_enc);
    if (!seed) {
      if (seeds.size >= SEEDS_KEPT) seeds.clear();
      seed = walletSeed(deps.secretBox, row);
      seeds.set(row.seed_enc, seed);
    }
    return seed.slice();
  };

  /**
   * The owner's wallet, made (and outside production funded from the chain's faucet) on first use.
   * The airdrop lands before the row is inserted, so another instance never reads a new wallet
   * still empty; a keypair that lost the insert race keeps its airdrop (development chains only).
   */
  async function wallet(owner: string): Promise<FundingWalletRow> {
    const airdrop = deps.devAirdropLamports > 0 && chain.requestAirdrop ? devAirdrop : undefined;
    const { wallet: row, created } = await ensureWallet(db, deps.secretBox, owner, clock.now(), airdrop, deps.onWalletCreated);
    if (created) log.info({ owner, address: row.address }, 'funding wallet created');
    return row;
  }

  /** Funds a new wallet from the development chain's faucet and waits for it to land. */
  async function devAirdrop(address: string): Promise<void> {
    try {
      const signature = await chain.requestAirdrop!(new PublicKey(address), BigInt(deps.devAirdropLamports));
      await chain.confirmTransaction(signature, (await chain.getBlockHeight()) + 150, 'confirmed');
      log.info({ address, lamports: deps.devAirdropLamports, signature }, 'funding wallet airdropped (development chain)');
    } catch (error) {
      log.warn({ err: error, address }, 'development airdrop failed; fund the wallet by hand');
    }
  }

  /** Balance, what is held and what is free, read now; exact bigints (docs/funding.md). */
  async function position(row: FundingWalletRow): Promise<{ balance: bigint; reserved: bigint; available: bigint; readAt: number }> {
    const readAt = clock.now();
    const balance = await chain.getLamports(new PublicKey(row.address));
    const reserved = (await reservedLamports(db, row.owner, { spendsBefore: readAt - SPEND_SETTLE_MS })) + withdrawing(row, readAt);
    return { balance, reserved, available: max0(balance - reserved), readAt };
  }

  /** A withdrawal's hold on the row: its lamports and fee, exact (read as text, wallets.ts). */
  function withdrawing(row: FundingWalletRow, now: number): bigint {
    return row.withdrawing_lamports !== null && row.withdrawing_until !== null && Number(row.withdrawing_until) > now ? BigInt(row.withdrawing_lamports) : 0n;
  }

  function refused<E extends InsufficientFundsError | LimitExceededError>(error: E): E {
    deps.onRefused?.(error.code as 'insufficient_funds' | 'funding_limit_exceeded');
    return error;
  }

  return {
    wallet,
    position,

    /** `GET /api/funding`: the wallet, its balance on chain, what is reserved and available, limits and today's use. */
    async account(owner: string) {
      const row = await wallet(owner);
      const { balance, reserved, available, readAt } = await position(row);
      const today = await dayUsage(db, owner, dayStartOf(readAt));
      const limits = (await readLimits(db, owner)) ?? limitsOf(row);
      return {
        owner,
        address: row.address,
        balanceLamports: String(balance),
        reservedLamports: String(reserved),
        availableLamports: String(available),
        limits: {
          maxLamportsPerLaunch: amount(limits.maxLamportsPerLaunch),
          maxLamportsPerDay: amount(limits.maxLamportsPerDay),
          maxLaunchesPerDay: limits.maxLaunchesPerDay,
          lowBalanceLamports: amount(limits.lowBalanceLamports),
        },
        spentTodayLamports: String(today.lamports),
        launchesToday: today.launches,
      };
    },

    /** `POST /api/launches/quote`: what the plan will take from the owner's wallet, and whether it is there. */
    async quote(owner: string, plan: LaunchPlan, steps: readonly StepName[]): Promise<LaunchQuote> {
      const row = await wallet(owner);
      const costs = await launchCosts(chain, plan, steps, new PublicKey(row.address));
      const { available } = await position(row);
      return presentQuote(costs, available);
    },

    /** Before a create's transaction: the quote's total and the balance it is checked against. */
    async prepare(owner: string, plan: LaunchPlan, steps: readonly StepName[]): Promise<PreparedReservation> {
      const row = await wallet(owner);
      const costs = await launchCosts(chain, plan, steps, new PublicKey(row.address));
      const readAt = clock.now();
      const balanceLamports = await chain.getLamports(new PublicKey(row.address));
      return { wallet: row, totalLamports: costs.totalLamports, balanceLamports, readAt };
    },

    /**
     * Inside the launch's own transaction: checks the owner's limits and funds and writes the
     * `reserve` entry. The owner's wallet row is locked first (PostgreSQL: `FOR UPDATE`; SQLite runs
     * one write transaction at a time), so parallel creates on any instance reserve one after another
     * and never more than is available. Throws with nothing written.
     */
    async reserve(trx: DbOrTx, prepared: PreparedReservation, launchId: string): Promise<void> {
      const owner = prepared.wallet.owner;
      const now = clock.now();
      const row = await lockWallet(trx, owner);
      // The locked row holds the limits (its lamports read as text): no second read of it.
      const limits = limitsOf(row);
      const total = prepared.totalLamports;
      const resetsAt = iso(dayStartOf(now) + DAY_MS);
      if (limits.maxLamportsPerLaunch !== null && total > limits.maxLamportsPerLaunch) {
        throw refused(new LimitExceededError(`This launch needs ${total} lamports; the limit per launch is ${limits.maxLamportsPerLaunch}`, {
          limit: 'maxLamportsPerLaunch',
          max: String(limits.maxLamportsPerLaunch),
          resetsAt: iso(now),
        }));
      }
      if (limits.maxLamportsPerDay !== null || limits.maxLaunchesPerDay !== null) {
        const today = await dayUsage(trx, owner, dayStartOf(now));
        if (limits.maxLaunchesPerDay !== null && today.launches + 1 > limits.maxLaunchesPerDay) {
          throw refused(new LimitExceededError(`${today.launches} launches today; the limit is ${limits.maxLaunchesPerDay} a day`, {
            limit: 'maxLaunchesPerDay',
            max: String(limits.maxLaunchesPerDay),
            resetsAt,
          }));
        }
        if (limits.maxLamportsPerDay !== null && today.lamports + total > limits.maxLamportsPerDay) {
          throw refused(new LimitExceededError(`Today's launches and unreserved spends (graduations, fee claims) hold or spent ${today.lamports} lamports; this one needs ${total} more, over the daily limit of ${limits.maxLamportsPerDay}`, {
            limit: 'maxLamportsPerDay',
            max: String(limits.maxLamportsPerDay),
            resetsAt,
          }));
        }
      }
      const held = (await reservedLamports(trx, owner, { spendsBefore: prepared.readAt - SPEND_SETTLE_MS })) + withdrawing(row, now);
      const available = max0(prepared.balanceLamports - held);
      if (total > available) {
        throw refused(new InsufficientFundsError(`The funding wallet ${row.address} has ${available} lamports available; this launch needs ${total}. Deposit to it and try again.`, {
          requiredLamports: String(total),
          availableLamports: String(available),
          address: row.address,
        }));
      }
      await insertEntry(trx, { owner, launchId, kind: 'reserve', lamports: total, now });
    },

    /** What the runner hands the step runner for an owner-funded launch: the payer's seed and what is left of the reservation. */
    async payerFor(launch: { id: string; owner: string; payer: string | null }): Promise<{ payerSeed: Uint8Array; budgetLamports: bigint | undefined } | undefined> {
      if (launch.payer === null) return undefined;
      // One read per step: the wallet and the launch's open reservation together.
      const row = await findPayer(db, launch.owner, launch.id);
      if (!row || row.address !== launch.payer) throw new Error(`launch ${launch.id}: its payer ${launch.payer} is not ${launch.owner}'s funding wallet`);
      // Exact: a launch never spends more than it reserved, and a reservation past 2^53 (a pool's SOL) is usable whole.
      const budgetLamports = row.left === null ? undefined : max0(row.left);
      return { payerSeed: seedOf(row), budgetLamports };
    },

    /**
     * The owner's funding wallet as a payer outside any launch's reservation: what pays a
     * creator-signed curve's graduation, which the creator did not sign for (docs/signing.md).
     */
    async ownerPayer(owner: string): Promise<{ payerSeed: Uint8Array; address: string }> {
      const row = await wallet(owner);
      return { payerSeed: walletSeed(deps.secretBox, row), address: row.address };
    },

    /** In a step's completion transaction: a `spend` entry for each transaction not recorded yet (one statement each, ledger.ts). */
    async recordSpends(trx: DbOrTx, launch: { id: string; owner: string; payer: string | null }, spent: ReadonlyArray<{ signature: string; lamports: bigint }>): Promise<void> {
      if (launch.payer === null || spent.length === 0) return;
      const now = clock.now();
      for (const s of spent) await insertSpendOnce(trx, { owner: launch.owner, launchId: launch.id, lamports: s.lamports, signature: s.signature, now });
    },

    /** In the transaction that completes or fails a launch: the one `release` entry of its reservation. */
    release: (trx: DbOrTx, launchId: string) => closeReservation(trx, { launchId, now: clock.now() }),

    /**
     * `PUT /api/funding/{owner}/limits`: sets the given limits (null clears one); the others stay.
     * An owner with no API key and no wallet is not found: nothing is made or airdropped.
     */
    async setLimits(owner: string, limits: Partial<FundingLimits>): Promise<FundingLimits> {
      if (!(await ownerKnown(db, owner))) throw new NotFoundError(`No owner "${owner}": it has no API key and no funding wallet, so it has no limits to set; nothing was created`);
      await wallet(owner);
      return writeLimits(db, owner, limits, clock.now());
    },

    /** `POST /api/funding/withdraw` (withdraw.ts). */
    withdraw: (owner: string, args: Parameters<typeof withdrawFunds>[2]): Promise<Withdrawal> =>
      withdrawFunds({ db, chain, secretBox: deps.secretBox, clock, log, wallet, withdrawing, spendSettleMs: SPEND_SETTLE_MS, onWithdrawn: deps.onWithdrawn, afterCommit: deps.afterCommit }, owner, args),
  };
}
