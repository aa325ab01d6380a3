import { PublicKey, type AccountInfo } from '@solana/web3.js';
import { NonRetriableError, TransientError, type NonRetriableCode, type TransientCode } from '../../../lib/retry.js';
import { ProgramFileError } from '../programs.js';
import type { SignedTx } from '../../steps/types.js';

/**
 * The messages between the main thread and the chain thread (`host.ts` serves, `client.ts` asks).
 * Everything crosses by structured clone: public keys as base58 strings, account data as bytes,
 * errors as their class name, code and message.
 */

/** What the main thread sends. */
export type ToChain =
  /** A backend method (`ChainMethod`), arguments already encoded. */
  | { t: 'call'; id: number; method: ChainMethod; args: unknown[] }
  /** A launch step to run with the chain's executors. */
  | { t: 'step'; id: number; input: WireStepInput }
  /** The answer to the chain thread's `record` (a signed transaction is durable, or why not). */
  | { t: 'recorded'; id: number; error?: WireError }
  | { t: 'close' };

/** What the chain thread sends. */
export type FromChain =
  | { t: 'ready'; info: ChainThreadInfo }
  | { t: 'failed'; error: WireError }
  | { t: 'result'; id: number; value: unknown; activity?: WireActivity }
  | { t: 'error'; id: number; error: WireError; activity?: WireActivity }
  /** A step's executor asks the main thread to persist a signed transaction before it is sent. */
  | { t: 'record'; id: number; step: number; label: string; tx: unknown; activity?: WireActivity }
  /** Activity no answer carried on within the chain thread's turn (see WireActivity). */
  | ({ t: 'activity' } & WireActivity)
  /** A log line of the chain thread's pino logger (JSON). */
  | { t: 'log'; line: string }
  | { t: 'closed' };

/**
 * The accounts of the transactions committed since the last report (ChainHistory.onActivity) and
 * the chain's transaction count. It rides on the next answer or record the chain thread sends (a
 * step's transaction commits just before its next record or its result), or goes alone at the end
 * of the thread's turn: no message of its own per transaction.
 */
export interface WireActivity {
  addresses: string[];
  count: number;
}

/** What the main thread learns once at start (the synchronous members of the backend). */
export interface ChainThreadInfo {
  payerSecretKey: Uint8Array;
  loadedPrograms: string[];
  genesisHash: string;
  timelineOrigin: { genesisMs: number; chainId: string };
  /** The chain's block height when it became ready: the timeline here never goes below it. */
  floorHeight: number;
  transactionCount: number;
}

/** A launch step as the chain thread runs it (`StepRunInput` without its functions). */
export interface WireStepInput {
  launchId: string;
  step: string;
  request: Record<string, unknown>;
  results: Record<string, unknown>;
  pending: Record<string, unknown>;
  /** The funding wallet's seed (owner-funded launches); never logged. */
  payerSeed?: Uint8Array | undefined;
  budgetLamports?: bigint | undefined;
  /** A creator-signed launch's payer and signed transactions (docs/signing.md). */
  signing?: { payer: string; transactions: Record<string, SignedTx> } | undefined;
  logBindings: Record<string, unknown>;
}

/** The backend methods the chain thread answers. */
export type ChainMethod =
  | 'getLatestBlockhash'
  | 'getBlockHeight'
  | 'sendRawTransaction'
  | 'getSignatureStatus'
  | 'confirmTransaction'
  | 'getAccountInfo'
  | 'getBalance'
  | 'getLamports'
  | 'getMinimumBalanceForRentExemption'
  | 'isProgramExecutable'
  | 'fetchPrograms'
  | 'probe'
  | 'airdrop'
  | 'requestAirdrop'
  | 'simulate'
  | 'signatureInfo'
  | 'signatureInfos'
  | 'storedTransaction'
  | 'programAccounts'
  | 'history.signaturesForAddress'
  | 'history.getTransaction'
  | 'history.balancesAt'
  | 'history.getProgramAccounts';

export interface WireError {
  name: string;
  code?: string;
  message: string;
  /** A ProgramFileError's file (the operator's mistake main.ts reports in one line). */
  programFile?: { path: string; programId: string; reason: string };
}

/** An error as it crosses: the retry classes keep their class and code, anything else its message. */
export function toWireError(error: unknown): WireError {
  if (error instanceof TransientError || error instanceof NonRetriableError) return { name: error.name, code: error.code, message: error.message };
  if (error instanceof ProgramFileError) return { name: error.name, message: error.message, programFile: { path: error.path, programId: error.programId, reason: error.reason } };
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}

export function fromWireError(wire: WireError): Error {
  if (wire.name === 'TransientError') return new TransientError((wire.code ?? 'internal_error') as TransientCode, wire.message);
  if (wire.name === 'NonRetriableError') return new NonRetriableError((wire.code ?? 'internal_error') as NonRetriableCode, wire.message);
  if (wire.programFile) return new ProgramFileError(wire.programFile.path, wire.programFile.programId, wire.programFile.reason);
  const error = new Error(wire.message);
  error.name = wire.name;
  return error;
}

/** An account as it crosses: owner as base58, data as bytes. */
export interface WireAccount {
  lamports: number;
  owner: string;
  executable: boolean;
  rentEpoch: number | undefined;
  data: Uint8Array;
}

export function toWireAccount(account: AccountInfo<Buffer> | null): WireAccount | null {
  if (account === null) return null;
  return { lamports: account.lamports, owner: account.owner.toBase58(), executable: account.executable, rentEpoch: account.rentEpoch, data: account.data };
}

export function fromWireAccount(wire: WireAccount | null): AccountInfo<Buffer> | null {
  if (wire === null) return null;
  const data = Buffer.from(wire.data.buffer, wire.data.byteOffset, wire.data.byteLength);
  return { lamports: wire.lamports, owner: new PublicKey(wire.owner), executable: wire.executable, rentEpoch: wire.rentEpoch, data };
}

export function toWireAccounts(list: Array<{ pubkey: PublicKey; account: AccountInfo<Buffer> }>): Array<{ pubkey: string; account: WireAccount }> {
  return list.map((entry) => ({ pubkey: entry.pubkey.toBase58(), account: toWireAccount(entry.account) as WireAccount }));
}

export function fromWireAccounts(list: Array<{ pubkey: string; account: WireAccount }>): Array<{ pubkey: PublicKey; account: AccountInfo<Buffer> }> {
  return list.map((entry) => ({ pubkey: new PublicKey(entry.pubkey), account: fromWireAccount(entry.account) as AccountInfo<Buffer> }));
}
