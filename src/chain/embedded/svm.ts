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

/**
 * The native LiteSVM object under the `litesvm` wrapper, which takes raw 32-byte addresses and
 * transaction bytes. The wrapper's own methods convert every address through `@solana/kit`'s
 * BigInt base58 codec and every transaction through kit's decoder and encoder: that was about a
 * tenth of the service's CPU per launch (profile in docs/benchmarks.md). Undefined when a
 * `litesvm` version no longer has it; the callers then take the wrapper's path.
 */
interface RawAccount {
  lamports(): bigint;
  data(): Uint8Array;
  owner(): Uint8Array;
  executable(): boolean;
}
interface RawSvm {
  getAccount(pubkey: Uint8Array): RawAccount | null;
  getBalance(pubkey: Uint8Array): bigint | null;
  sendLegacyTransaction(bytes: Uint8Array): TransactionMetadata | FailedTransactionMetadata;
  sendVersionedTransaction(bytes: Uint8Array): TransactionMetadata | FailedTransactionMetadata;
}
function rawOf(svm: LiteSVM): RawSvm | undefined {
  const inner = (svm as unknown as { inner?: Partial<RawSvm> }).inner;
  return inner && typeof inner.getAccount === 'function' && typeof inner.sendLegacyTransaction === 'function' ? (inner as RawSvm) : undefined;
}

/** Base58 ⇄ bytes for account addresses, memoized (a launch touches the same few dozen addresses again and again). */
const MEMO_LIMIT = 4096;
const addressBytes = new Map<string, Uint8Array>();
const ownerNames = new Map<string, string>();
function bytesOf(addr: string): Uint8Array {
  let bytes = addressBytes.get(addr);
  if (!bytes) {
    if (addressBytes.size >= MEMO_LIMIT) addressBytes.clear();
    bytes = bs58.decode(addr);
    addressBytes.set(addr, bytes);
  }
  return bytes;
}
function nameOf(bytes: Uint8Array): string {
  const key = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  let name = ownerNames.get(key);
  if (!name) {
    if (ownerNames.size >= MEMO_LIMIT) ownerNames.clear();
    name = bs58.encode(bytes);
    ownerNames.set(key, name);
  }
  return name;
}

/** Lamports of an account (null when it does not exist). */
export function balanceOf(svm: LiteSVM, addr: string): bigint | null {
  const raw = rawOf(svm);
  return raw ? raw.getBalance(bytesOf(addr)) : svm.getBalance(address(addr));
}

/** Executes the transaction's bytes (legacy or versioned) in LiteSVM. */
export function execute(svm: LiteSVM, bytes: Uint8Array): Execution {
  const raw = rawOf(svm);
  if (!raw) return outcomeOf(svm.sendTransaction(getTransactionDecoder().decode(bytes)));
  // Signature count (compact-u16), the signatures, then the message: its first byte has the top
  // bit set for a versioned message. Signatures are verified by LiteSVM itself (sigverify is on).
  let offset = 0;
  let count = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = bytes[offset++] ?? 0;
    count |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
  }
  const versioned = ((bytes[offset + count * 64] ?? 0) & 0x80) !== 0;
  return outcomeOf(versioned ? raw.sendVersionedTransaction(bytes) : raw.sendLegacyTransaction(bytes));
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
  const raw = rawOf(svm);
  if (raw) {
    const acc = raw.getAccount(bytesOf(addr));
    if (acc === null) return null;
    return { address: addr, lamports: acc.lamports(), owner: nameOf(acc.owner()), executable: acc.executable(), data: acc.data() };
  }
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
  const raw = rawOf(svm);
  if (raw) {
    const acc = raw.getAccount(pubkey.toBytes());
    if (acc === null) return null;
    return { lamports: Number(acc.lamports()), owner: new PublicKey(acc.owner()), executable: acc.executable(), data: Buffer.from(acc.data()), rentEpoch: Number.MAX_SAFE_INTEGER };
  }
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
