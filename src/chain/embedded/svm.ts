import { address, getTransactionDecoder, lamports as toLamports, type Address } from '@solana/kit';
import { VersionedTransaction, type AccountInfo, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { Clock as SvmClock, FailedTransactionMetadata, LiteSVM, SimulatedTransactionInfo, type TransactionMetadata } from 'litesvm';
import { transactionErrorJson } from './errorJson.js';
import type { ChainTime } from './timeline.js';

/** One persisted account, as stored in `chain_accounts` (data base64). */
export interface StoredAccount {
  address: string;
  lamports: bigint;
  owner: string;
  executable: boolean;
  data: Uint8Array;
}

/** The parts of a serialized transaction the embedded chain checks before executing it. */
export interface DecodedTransaction {
  signature: string;
  blockhash: string;
  writable: string[];
  /** Every static account key, in message order. */
  keys: string[];
  numSignatures: number;
  bytes: Uint8Array;
}

/** What a run (or simulation) reports besides success: logs, compute, inner instructions, error. */
export interface ExecutionMeta {
  logs: string[];
  computeUnits: number;
  /** Per top-level instruction, the instructions it invoked (account indexes into the message). */
  innerInstructions: Array<Array<{ programIdIndex: number; accounts: number[]; data: Uint8Array; stackHeight: number }>>;
  /** The transaction error in the JSON form a real node sends (`{"InstructionError":[0,{"Custom":1}]}`), or null. */
  err: unknown;
}

/** Outcome of running one transaction in LiteSVM. */
export type Execution =
  | ({ ok: true } & ExecutionMeta)
  | ({ ok: false; executed: boolean; text: string } & ExecutionMeta);

/**
 * A LiteSVM with the standard programs. Blockhash expiry is checked by the timeline, and duplicate
 * detection by the persisted signature table (LiteSVM's in-memory history would remember a
 * transaction whose persistence failed and was rolled back, and would not survive a restart).
 */
export function createSvm(): LiteSVM {
  return new LiteSVM().withBlockhashCheck(false).withTransactionHistory(0n);
}

/** Reads signature, blockhash and writable accounts from web3.js-serialized bytes. */
export function decodeTransaction(bytes: Uint8Array): DecodedTransaction {
  const tx = VersionedTransaction.deserialize(bytes);
  const first = tx.signatures[0];
  if (!first) throw new Error('transaction has no signature');
  const keys = tx.message.staticAccountKeys;
  const writable = keys.filter((_, i) => tx.message.isAccountWritable(i)).map((k) => k.toBase58());
  return {
    signature: bs58.encode(first),
    blockhash: tx.message.recentBlockhash,
    writable,
    keys: keys.map((k) => k.toBase58()),
    numSignatures: tx.message.header.numRequiredSignatures,
    bytes,
  };
}

/** Executes the transaction: the v1 bytes go through kit's transaction decoder into LiteSVM. */
export function execute(svm: LiteSVM, bytes: Uint8Array): Execution {
  return outcomeOf(svm.sendTransaction(getTransactionDecoder().decode(bytes)));
}

/**
 * Runs the transaction without committing it (preflight, `simulateTransaction`). With
 * `sigVerify: false` unsigned transactions simulate too, as on a real node.
 */
export function simulate(svm: LiteSVM, bytes: Uint8Array, options: { sigVerify: boolean }): Execution {
  const tx = getTransactionDecoder().decode(bytes);
  if (options.sigVerify) return outcomeOf(svm.simulateTransaction(tx));
  svm.withSigverify(false);
  try {
    return outcomeOf(svm.simulateTransaction(tx));
  } finally {
    svm.withSigverify(true);
  }
}

function outcomeOf(result: TransactionMetadata | FailedTransactionMetadata | SimulatedTransactionInfo): Execution {
  const failed = result instanceof FailedTransactionMetadata ? result : undefined;
  const meta = result instanceof SimulatedTransactionInfo || result instanceof FailedTransactionMetadata ? result.meta() : result;
  const common: ExecutionMeta = {
    logs: meta.logs(),
    computeUnits: Number(meta.computeUnitsConsumed()),
    innerInstructions: meta.innerInstructions().map((list) =>
      list.map((inner) => {
        const ix = inner.instruction();
        return { programIdIndex: ix.programIdIndex(), accounts: [...ix.accounts()], data: ix.data(), stackHeight: inner.stackHeight() };
      }),
    ),
    err: failed ? transactionErrorJson(failed.err()) : null,
  };
  if (!failed) return { ok: true, ...common };
  const err = failed.err();
  // Fieldless errors (numbers) reject the transaction before execution; the rest ran and paid fees.
  return { ok: false, executed: typeof err !== 'number', text: `${failed.toString()}\n${common.logs.join('\n')}`, ...common };
}

/** Moves the LiteSVM clock sysvar to the timeline's current instant. */
export function syncClock(svm: LiteSVM, time: ChainTime): void {
  const epochStart = BigInt(time.unixTimestamp - Math.floor(((time.slot % 432_000) * 400) / 1000));
  svm.setClock(new SvmClock(BigInt(time.slot), epochStart, BigInt(time.epoch), BigInt(time.epoch), BigInt(time.unixTimestamp)));
}

/** The account as stored, or null when it does not exist (closed). */
export function readStored(svm: LiteSVM, addr: string): StoredAccount | null {
  const acc = svm.getAccount(address(addr));
  if (!acc.exists) return null;
  return { address: addr, lamports: acc.lamports, owner: acc.programAddress, executable: acc.executable, data: acc.data };
}

/** Writes a stored account back into LiteSVM. */
export function restore(svm: LiteSVM, acc: StoredAccount): void {
  svm.setAccount({
    address: address(acc.address),
    lamports: toLamports(acc.lamports),
    programAddress: address(acc.owner) as Address,
    executable: acc.executable,
    data: acc.data,
    space: BigInt(acc.data.length),
  });
}

/** Puts an account back as it was before a transaction; `null` (did not exist) empties it. */
export function rollback(svm: LiteSVM, addr: string, before: StoredAccount | null): void {
  restore(svm, before ?? { address: addr, lamports: 0n, owner: '11111111111111111111111111111111', executable: false, data: new Uint8Array(0) });
}

/** The account in web3.js form. */
export function readAccountInfo(svm: LiteSVM, pubkey: PublicKey): AccountInfo<Buffer> | null {
  const acc = svm.getAccount(address(pubkey.toBase58()));
  if (!acc.exists) return null;
  return {
    lamports: Number(acc.lamports),
    owner: new PublicKey(acc.programAddress),
    executable: acc.executable,
    data: Buffer.from(acc.data),
    rentEpoch: Number.MAX_SAFE_INTEGER,
  };
}
