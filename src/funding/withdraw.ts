import { PublicKey, SystemProgram } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Logger } from 'pino';
import type { ChainBackend } from '../chain/backend.js';
import { serializeSigned } from '../chain/ed25519.js';
import { memoInstruction } from '../chain/memo.js';
import { buildSignedTransaction, estimateFee } from '../chain/transaction.js';
import { transferTargetProblem } from '../chain/transferTarget.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db, DbOrTx } from '../db/database.js';
import type { FundingEntryRow, FundingWalletRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError, InsufficientFundsError, InvalidInputError, UnavailableError, UnprocessableError } from '../lib/errors.js';
import { newSortableId } from '../lib/ids.js';
import { NonRetriableError } from '../lib/retry.js';
import { insertEntry, reservedLamports, withdrawalByKey } from './ledger.js';
import { lockWallet, walletSigner } from './wallets.js';

/** What `POST /api/funding/withdraw` answers. */
export interface Withdrawal {
  signature: string;
  lamports: string;
  to: string;
}

/** What a withdrawal needs from the rest of funding (funding.ts). */
export interface WithdrawDeps {
  db: Db;
  chain: ChainBackend;
  secretBox: SecretBox;
  clock: Clock;
  log: Logger;
  /** The owner's wallet, made on first use. */
  wallet(owner: string): Promise<FundingWalletRow>;
  /** Lamports a withdrawal being sent holds on the wallet row at `now` (0 when none). */
  withdrawing(row: FundingWalletRow, now: number): bigint;
  /** Spends recorded this recently may not show in a balance read just before (ledger.ts). */
  spendSettleMs: number;
  onWithdrawn?(trx: DbOrTx, withdrawal: { owner: string; address: string; to: string; lamports: bigint; signature: string }): Promise<void>;
  afterCommit?(): void;
}

/** How long a withdrawal's lamports stay held if its process dies before recording it (the blockhash is long expired by then). */
const WITHDRAW_HOLD_MS = 180_000;

const max0 = (v: bigint) => (v > 0n ? v : 0n);

/**
 * `POST /api/funding/withdraw` (docs/funding.md, "Withdrawals"): moves `lamports` from the owner's
 * wallet to `to`, never below what its reservations hold, never to an address that cannot take
 * them (checked before anything is signed). One withdrawal at a time per owner: its lamports are
 * held on the wallet row (every instance sees them) from before the send until its ledger entry is
 * written. Each withdrawal's transaction carries its id in a memo, so identical requests are
 * distinct transfers; its entry records the fee the wallet paid. The same Idempotency-Key answers
 * the recorded withdrawal instead of sending again.
 */
export async function withdrawFunds(deps: WithdrawDeps, owner: string, args: { to: PublicKey; lamports: bigint; idempotencyKey?: string | undefined; requestHash?: string | undefined }): Promise<Withdrawal> {
  const { db, chain, clock, log } = deps;
  if (args.idempotencyKey !== undefined) {
    const done = await withdrawalByKey(db, owner, args.idempotencyKey);
    if (done) return replayWithdrawal(done, args.requestHash);
  }
  const row = await deps.wallet(owner);
  const from = new PublicKey(row.address);
  const to = args.to.toBase58();
  if (from.equals(args.to)) throw new InvalidInputError('`to` is the funding wallet itself', { fields: [{ field: 'to', message: 'must be another address' }] });
  const problem = await transferTargetProblem(chain, args.to, args.lamports);
  if (problem !== undefined) {
    throw new InvalidInputError(`\`to\` ${to} ${problem}; nothing was sent`, { fields: [{ field: 'to', message: problem }] }, 'invalid_destination');
  }
  const readAt = clock.now();
  const balance = await chain.getLamports(from);
  const rentFloor = BigInt(await chain.getMinimumBalanceForRentExemption(0));
  const fee = BigInt(estimateFee(chain.fees, 1));
  const needed = args.lamports + fee;
  await db.transaction().execute(async (trx) => {
    const locked = await lockWallet(trx, owner);
    const now = clock.now();
    if (deps.withdrawing(locked, now) > 0n) throw new ConflictError('Another withdrawal from this wallet is being sent; retry in a moment', undefined, 'withdrawal_in_progress');
    const held = await reservedLamports(trx, owner, { spendsBefore: readAt - deps.spendSettleMs });
    if (needed > balance) {
      throw new InsufficientFundsError(`The funding wallet ${row.address} holds ${balance} lamports; this withdrawal needs ${needed} with its fee`, {
        requiredLamports: String(needed),
        availableLamports: String(max0(balance - held)),
        address: row.address,
      });
    }
    if (needed > balance - held) {
      throw new ConflictError(`${held} lamports of the wallet are reserved for launches in flight; at most ${max0(balance - held - fee)} can be withdrawn now`, { reservedLamports: String(held), availableLamports: String(max0(balance - held)) }, 'funds_reserved');
    }
    const left = balance - needed;
    if (left > 0n && left < rentFloor) {
      throw new InvalidInputError(`This would leave ${left} lamports, below the rent-exempt minimum of ${rentFloor}; withdraw ${balance - fee} (everything) or leave at least ${rentFloor}`, { fields: [{ field: 'lamports', message: 'leaves a balance below the rent-exempt minimum' }] });
    }
    await trx.updateTable('funding_wallets').set({ withdrawing_lamports: needed, withdrawing_until: now + WITHDRAW_HOLD_MS }).where('owner', '=', owner).execute();
  });
  const unhold = { withdrawing_lamports: null, withdrawing_until: null };
  const id = newSortableId('fle', clock.now());
  let signature: string | undefined;
  try {
    const signer = walletSigner(deps.secretBox, row);
    const blockhash = await chain.getLatestBlockhash();
    // The memo names this withdrawal: two identical requests never build one transaction.
    const tx = buildSignedTransaction(chain, signer, [SystemProgram.transfer({ fromPubkey: from, toPubkey: args.to, lamports: args.lamports }), memoInstruction(`withdrawal ${id}`)], [], blockhash);
    signature = bs58.encode(tx.signature!);
    await chain.sendRawTransaction(serializeSigned(tx));
    await chain.confirmTransaction(signature, blockhash.lastValidBlockHeight, 'confirmed');
  } catch (error) {
    const status = signature === undefined ? null : await chain.getSignatureStatus(signature).catch(() => null);
    if (signature === undefined || status === null) {
      await db.updateTable('funding_wallets').set(unhold).where('owner', '=', owner).execute();
      log.warn({ err: error, owner, signature }, 'withdrawal not sent');
      if (error instanceof NonRetriableError) throw new UnprocessableError('withdrawal_failed', `The withdrawal to ${to} was refused by the chain and not sent (${error.code}); nothing was paid`);
      throw new UnavailableError('The withdrawal could not be sent now (the chain did not answer); nothing was paid, retry later', 5);
    }
    if (status.err !== null) {
      // It landed and failed: the wallet paid its fee, which the ledger records; nothing else moved.
      const paid = (await feePaid(chain, signature, from, 0n)) ?? fee;
      await db.transaction().execute(async (trx) => {
        await insertEntry(trx, { id, owner, kind: 'fee', lamports: paid, signature, idempotencyKey: args.idempotencyKey ?? null, requestHash: args.requestHash ?? null, details: { to, withdrawal: String(args.lamports), failed: true }, now: clock.now() });
        await trx.updateTable('funding_wallets').set(unhold).where('owner', '=', owner).execute();
      });
      log.warn({ err: error, owner, signature, fee: String(paid) }, 'withdrawal failed on chain; its fee is recorded');
      throw failedOnChain(signature, to, paid);
    }
    // It landed although confirming it failed: record it like any other.
  }
  const paid = (await feePaid(chain, signature, from, args.lamports)) ?? fee;
  await db.transaction().execute(async (trx) => {
    await insertEntry(trx, { id, owner, kind: 'withdraw', lamports: args.lamports, feeLamports: paid, signature, idempotencyKey: args.idempotencyKey ?? null, requestHash: args.requestHash ?? null, details: { to }, now: clock.now() });
    await trx.updateTable('funding_wallets').set(unhold).where('owner', '=', owner).execute();
    await deps.onWithdrawn?.(trx, { owner, address: row.address, to, lamports: args.lamports, signature: signature! });
  });
  deps.afterCommit?.();
  log.info({ owner, lamports: String(args.lamports), to, signature, fee: String(paid) }, 'withdrawal sent');
  return { signature: signature!, lamports: String(args.lamports), to };
}

const failedOnChain = (signature: string, to: string, fee: bigint) =>
  new UnprocessableError('withdrawal_failed', `The withdrawal's transaction ${signature} to ${to} failed on chain: nothing moved but its fee of ${fee} lamports, which the ledger records`, { signature, feeLamports: String(fee) });

/** The fee the wallet paid in `signature` (what it lost besides `moved`), from the chain's record; undefined where the chain has none yet. */
async function feePaid(chain: ChainBackend, signature: string, wallet: PublicKey, moved: bigint): Promise<bigint | undefined> {
  const tx = await chain.history.getTransaction(signature).catch(() => null);
  const before = tx?.preBalances[0];
  const after = tx?.postBalances[0];
  if (!tx || tx.accountKeys[0] !== wallet.toBase58() || before === undefined || after === undefined) return undefined;
  return BigInt(before) - BigInt(after) - (tx.err === null || tx.err === undefined ? moved : 0n);
}

function replayWithdrawal(entry: FundingEntryRow, requestHash: string | undefined): Withdrawal {
  if (requestHash !== undefined && entry.request_hash !== null && entry.request_hash !== requestHash) {
    throw new UnprocessableError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
  }
  const details = entry.details === null ? {} : (JSON.parse(entry.details) as { to?: string });
  if (entry.kind === 'fee') throw failedOnChain(entry.signature ?? '', details.to ?? '', BigInt(entry.lamports));
  return { signature: entry.signature ?? '', lamports: String(entry.lamports), to: details.to ?? '' };
}
