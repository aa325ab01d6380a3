import type { FetchFailure } from './missingPrograms.js';
import type { BreakerSnapshot } from '../lib/breaker.js';
import type { AccountInfo, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import type { ChainHistory } from './history.js';

/** Commitment levels the service uses; `processed` only appears in statuses. */
export type Commitment = 'processed' | 'confirmed' | 'finalized';

/** A recent blockhash and the last block height at which a transaction using it can land. */
export interface BlockhashInfo {
  blockhash: string;
  lastValidBlockHeight: number;
}

/** What the chain knows about a signature; `err` is non-null when the transaction failed on chain. */
export interface SignatureStatus {
  status: Commitment;
  err: unknown;
}

/** A health probe result; obtained by a real account read. */
export interface ChainProbe {
  slot: number;
  unixTimestamp: number;
  payerBalance: number;
}

/** Options of {@link ChainBackend.confirmTransaction}. */
export interface ConfirmOptions {
  /**
   * The transaction's signed bytes: sent again (the same signature) while it is not seen, as a
   * production sender does against leaders that drop transactions. Backends that cannot drop one
   * (the embedded chain) ignore it.
   */
  rebroadcast?: Uint8Array;
}

/** One RPC endpoint as health shows it: whether it answered the last probe and its breaker's state. */
export interface EndpointHealth {
  host: string;
  status: 'pass' | 'fail';
  breaker: BreakerSnapshot['state'];
  message?: string;
}

/** Transaction building options a cluster may need (docs/api.md: configurable priority fee and compute limit). */
export interface FeeSettings {
  priorityFeeMicroLamports: number;
  computeUnitLimit: number | undefined;
  /**
   * PRIORITY_FEE_MAX_MICROLAMPORTS (RPC): each transaction's compute-unit price comes from the
   * network (`getRecentPrioritizationFees`), never above this; cost estimates assume this price.
   */
  priorityFeeMaxMicroLamports?: number | undefined;
}

/**
 * The small surface both chain backends implement. Steps build real web3.js transactions and
 * hand their bytes to `sendRawTransaction`; they never know which backend runs them.
 * Failures are classified: `TransientError` (retry), `NonRetriableError` (fail the launch).
 */
export interface ChainBackend {
  readonly kind: 'embedded' | 'rpc';
  /** The service's launch wallet: pays fees and rent, holds undistributed allocations. */
  readonly payer: Keypair;
  readonly fees: FeeSettings;
  getLatestBlockhash(): Promise<BlockhashInfo>;
  getBlockHeight(): Promise<number>;
  /** Sends signed transaction bytes; resolves with the base58 signature once accepted. */
  sendRawTransaction(bytes: Uint8Array): Promise<string>;
  getSignatureStatus(signature: string): Promise<SignatureStatus | null>;
  /**
   * Waits until the signature reaches `commitment`. Throws `TransientError('blockhash_expired')`
   * when the block height passes `lastValidBlockHeight` first, `NonRetriableError('program_error')`
   * when the transaction failed on chain.
   */
  confirmTransaction(signature: string, lastValidBlockHeight: number, commitment?: Commitment, options?: ConfirmOptions): Promise<void>;
  getAccountInfo(pubkey: PublicKey, commitment?: Commitment): Promise<AccountInfo<Buffer> | null>;
  getBalance(pubkey: PublicKey): Promise<number>;
  /**
   * The balance exactly, as a bigint (what funding reads: a JS number rounds from 2^53 lamports on).
   * The embedded chain's is exact at any size; an RPC's answer is JSON, exact up to 2^53.
   */
  getLamports(pubkey: PublicKey): Promise<bigint>;
  /**
   * Asks the cluster's faucet for lamports (a test validator, `npm run chain`, devnet; the embedded
   * chain's faucet). Resolves with the airdrop's signature; mainnet refuses.
   */
  requestAirdrop?(pubkey: PublicKey, lamports: bigint): Promise<string>;
  getMinimumBalanceForRentExemption(size: number): Promise<number>;
  isProgramExecutable(programId: PublicKey): Promise<boolean>;
  /**
   * The embedded chain with CHAIN_CLONE_FROM: fetches those of `programIds` it lacks (or waits for
   * the fetch under way) and loads them; resolves once they are loaded or the fetch failed (then it
   * logged one line saying why, and resolves with that failure while some are still missing).
   * Absent where programs cannot be fetched.
   */
  fetchPrograms?(programIds: string[]): Promise<FetchFailure | undefined>;
  /** Health check: reads the clock sysvar and the payer account. */
  probe(): Promise<ChainProbe>;
  /** What the chain watcher reads: address histories, transactions, accounts, program scans (docs/watcher.md). */
  readonly history: ChainHistory;
  /**
   * The compute budget of a transaction from the network's own signals (RPC with
   * PRIORITY_FEE_MAX_MICROLAMPORTS): the price from recent prioritization fees over the accounts it
   * writes, the unit limit from a simulation plus a margin, neither above what estimates assumed.
   * `tx` is the transaction as built under `fees`.
   */
  networkBudget?(tx: Transaction): Promise<FeeSettings>;
  /** Circuit breaker state, when the backend has one (RPC): `open` only when every endpoint's breaker is. */
  breakerState?(): BreakerSnapshot;
  /** Each RPC endpoint as of the last probe (RPC only). */
  endpointHealth?(): EndpointHealth[];
  close(): Promise<void>;
}
