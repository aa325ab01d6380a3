import { address, getTransactionDecoder, lamports as toLamports, type Address } from '@solana/kit';
import { VersionedTransaction, type AccountInfo, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { Clock as SvmClock, FailedTransactionMetadata, LiteSVM } from 'litesvm';
import type { StoredAccount } from './store.js';
import type { ChainTime } from './timeline.js';

/** The parts of a serialized transaction the embedded chain checks before executing it. */
export interface DecodedTransaction {
  signature: string;
  blockhash: string;
  writable: string[];
  bytes: Uint8Array;
}

/** Outcome of running one transaction in LiteSVM. */
export type Execution =
  | { ok: true }
  | { ok: false; executed: boolean; text: string };

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
  return { signature: bs58.encode(first), blockhash: tx.message.recentBlockhash, writable, bytes };
}

/** Executes the transaction: the v1 bytes go through kit's transaction decoder into LiteSVM. */
export function execute(svm: LiteSVM, bytes: Uint8Array): Execution {
  const result = svm.sendTransaction(getTransactionDecoder().decode(bytes));
  if (!(result instanceof FailedTransactionMetadata)) return { ok: true };
  const err = result.err();
  const logs = result.meta().logs();
  // Fieldless errors (numbers) reject the transaction before execution; the rest ran and paid fees.
  return { ok: false, executed: typeof err !== 'number', text: `${result.toString()}\n${logs.join('\n')}` };
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
