import { createHash } from 'node:crypto';
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
  /** The nonce account of a durable-nonce transaction (its first instruction advances it); its `blockhash` is then that nonce. */
  nonceAccount?: string | undefined;
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
  // LiteSVM's own airdrop account starts with 2^62 lamports (its default holds less than a million
  // SOL, and an airdrop past it fails silently), so a balance past 2^53 can be made and read exactly.
  return new LiteSVM().withLamports(2n ** 62n).withBlockhashCheck(false).withTransactionHistory(0n);
}

/** Reads signature, blockhash and writable accounts from web3.js-serialized bytes. */
export function decodeTransaction(bytes: Uint8Array): DecodedTransaction {
  const tx = VersionedTransaction.deserialize(bytes);
  const first = tx.signatures[0];
  if (!first) throw new Error('transaction has no signature');
  const keys = tx.message.staticAccountKeys;
  const writable = keys.filter((_, i) => tx.message.isAccountWritable(i)).map((k) => k.toBase58());
  const nonceAccount = advancedNonce(keys, tx.message.compiledInstructions[0]);
  return {
    signature: bs58.encode(first),
    blockhash: tx.message.recentBlockhash,
    writable,
    keys: keys.map((k) => k.toBase58()),
    numSignatures: tx.message.header.numRequiredSignatures,
    bytes,
    nonceAccount,
  };
}

/** The System program's AdvanceNonceAccount instruction index (a u32, little-endian, leads its data). */
const ADVANCE_NONCE_ACCOUNT = 4;

/** The nonce account a transaction's first instruction advances, when it is AdvanceNonceAccount (a durable-nonce transaction). */
function advancedNonce(keys: PublicKey[], first: { programIdIndex: number; accountKeyIndexes: number[]; data: Uint8Array } | undefined): string | undefined {
  if (!first || first.data.length < 4) return undefined;
  if (!keys[first.programIdIndex]?.equals(SYSTEM_PROGRAM)) return undefined;
  if (Buffer.from(first.data).readUInt32LE(0) !== ADVANCE_NONCE_ACCOUNT) return undefined;
  const account = first.accountKeyIndexes[0];
  return account === undefined ? undefined : keys[account]?.toBase58();
}

const SYSTEM_PROGRAM = new PublicKey('11111111111111111111111111111111');

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

/** Bytes of a nonce account (version, state, authority, nonce, fee calculator). */
const NONCE_ACCOUNT_LENGTH = 80;

/** The nonce a nonce account holds (base58), or undefined when it is no initialized nonce account. */
export function storedNonce(svm: LiteSVM, account: string): string | undefined {
  const stored = readStored(svm, account);
  if (!stored || stored.owner !== SYSTEM_PROGRAM.toBase58() || stored.data.length !== NONCE_ACCOUNT_LENGTH) return undefined;
  const data = Buffer.from(stored.data);
  if (data.readUInt32LE(4) !== 1) return undefined; // State::Initialized
  return bs58.encode(data.subarray(40, 72));
}

/**
 * LiteSVM runs without its own blockhash check, so a durable-nonce transaction is checked here as
 * a node checks it: its blockhash must be the nonce its account holds now (false otherwise: it can
 * never land).
 */
export function admitDurableNonce(svm: LiteSVM, account: string, blockhash: string): boolean {
  const current = storedNonce(svm, account);
  return current !== undefined && current === blockhash;
}

/**
 * After a durable-nonce transaction ran: its account holds a new nonce, as a cluster's advance
 * takes it from the block's blockhash. LiteSVM derives it from the transaction's own blockhash, so
 * accounts initialized together (one nonce) would all advance to one value, and a later
 * transaction on another of them could not withdraw them (its advance's value is theirs); a value
 * of this transaction's own keeps them apart.
 */
export function renewNonce(svm: LiteSVM, account: string, signature: string): void {
  const stored = readStored(svm, account);
  if (!stored || storedNonce(svm, account) === undefined) return;
  const data = Buffer.from(stored.data);
  createHash('sha256').update('embedded-durable-nonce').update(signature).digest().copy(data, 40);
  restore(svm, { ...stored, data });
}
