import type { AccountInfo, PublicKey } from '@solana/web3.js';

/** One entry of an address's history, as `getSignaturesForAddress` answers it. */
export interface SignatureEntry {
  signature: string;
  slot: number;
  /** Non-null when the transaction failed on chain (it still paid fees and is in the history). */
  err: unknown;
  blockTime: number | null;
}

/** A token balance of an account before or after a transaction (raw base units). */
export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string | null;
  amount: string;
}

/** One instruction with its accounts resolved to addresses. */
export interface HistoryInstruction {
  programId: string;
  accounts: string[];
  data: Uint8Array;
}

/** A processed transaction as the watcher reads it. */
export interface HistoryTransaction {
  signature: string;
  slot: number;
  blockTime: number | null;
  err: unknown;
  accountKeys: string[];
  /** Top-level instructions, in order (the instruction index is the position here). */
  instructions: HistoryInstruction[];
  /**
   * The instructions each top-level instruction invoked (CPI), as `meta.innerInstructions`:
   * `index` is the top-level instruction's position, `instructions` in invocation order.
   */
  innerInstructions: Array<{ index: number; instructions: HistoryInstruction[] }>;
  logs: string[];
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
  /** Lamports of each account (as `accountKeys`) before and after, exact; index 0 is the fee payer. */
  preBalances: bigint[];
  postBalances: bigint[];
}

/**
 * One account's lamports around one processed transaction ({@link ChainHistory.balancesAt}): what a
 * step's spend and the funding watch read, without the instructions, logs or token balances.
 */
export interface AccountBalanceChange {
  signature: string;
  slot: number;
  blockTime: number | null;
  /** Non-null when the transaction failed on chain (it still paid its fee). */
  err: unknown;
  /** The account's position among the transaction's account keys (0: the fee payer), -1 when it is not one of them. */
  index: number;
  /** Its lamports before and after, exact (0n both when `index` is -1). */
  pre: bigint;
  post: bigint;
}

/** Filters of a program-account scan, as in `getProgramAccounts`. */
export type AccountFilter = { dataSize: number } | { memcmp: { offset: number; bytes: string } };

/**
 * The small surface the chain watcher reads through; both backends answer it (docs/watcher.md). On RPC it
 * is `getSignaturesForAddress`/`getTransaction` at `finalized`, behind the RPC breaker; on the
 * embedded chain it reads the durable signature index kept with the chain state.
 */
export interface ChainHistory {
  /**
   * Signatures that touched `address`, newest first, strictly after `until` (exclusive) and before
   * `before` (exclusive), at most `limit` (1..1000).
   */
  signaturesForAddress(address: string, options: { until?: string | undefined; before?: string | undefined; limit: number }): Promise<SignatureEntry[]>;
  getTransaction(signature: string): Promise<HistoryTransaction | null>;
  /**
   * `address`'s lamports around each of `signatures` (in the order given; null where the chain has
   * no record of it): the same numbers {@link getTransaction} gives as `preBalances`/`postBalances`
   * at the address's index, in one batched read, nothing decoded but the account keys. Where the
   * backend has it (the embedded chain); otherwise callers read {@link getTransaction}.
   */
  balancesAt?(address: string, signatures: readonly string[]): Promise<Array<AccountBalanceChange | null>>;
  getAccountInfo(pubkey: PublicKey): Promise<AccountInfo<Buffer> | null>;
  getProgramAccounts(programId: PublicKey, filters: AccountFilter[]): Promise<Array<{ pubkey: PublicKey; account: AccountInfo<Buffer> }>>;
  /**
   * A wake-up source, where the backend has one: `listener` gets the accounts of each transaction
   * the chain processed (the embedded chain calls it after the commit; on RPC a Geyser or provider
   * stream would). A hint only: the watcher moves those addresses' next check to now, and the
   * cursor poller stays the source of truth. Returns the unsubscribe function.
   */
  onActivity?(listener: (addresses: readonly string[]) => void): () => void;
}
