import { VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { sql } from 'kysely';
import type { LiteSVM } from 'litesvm';
import type { Db, DbOrTx } from '../../db/database.js';
import type { AccountBalanceChange, HistoryTransaction, SignatureEntry, TokenBalance } from '../history.js';
import { LAMPORTS_PER_SIGNATURE } from '../transaction.js';
import type { ExecutionMeta } from './svm.js';
import { readStored } from './svm.js';

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';

/** A token balance in the form `getTransaction` answers it. */
export interface RpcTokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: { amount: string; decimals: number; uiAmount: number | null; uiAmountString: string };
}

/** The `meta` of a transaction as `getTransaction` answers it (stored as JSON). */
export interface RpcTransactionMeta {
  err: unknown;
  status: { Ok: null } | { Err: unknown };
  fee: number;
  preBalances: number[];
  postBalances: number[];
  /**
   * The same lamports as decimal text, exact (a JSON number rounds from 2^53 on; the faucet holds
   * 2^62): what the service itself reads. Absent in rows written before it; not sent over JSON-RPC.
   */
  exactPreBalances?: string[];
  exactPostBalances?: string[];
  preTokenBalances: RpcTokenBalance[];
  postTokenBalances: RpcTokenBalance[];
  innerInstructions: Array<{ index: number; instructions: Array<{ programIdIndex: number; accounts: number[]; data: string; stackHeight: number }> }>;
  logMessages: string[];
  computeUnitsConsumed: number;
  loadedAddresses: { writable: string[]; readonly: string[] };
  rewards: [];
}

/** Balances of every account of a transaction at one instant (before or after it runs). */
export interface BalanceSnapshot {
  lamports: bigint[];
  tokens: RpcTokenBalance[];
}

/** The row a processed transaction adds to the history (see migration 008). */
export interface HistoryRecord {
  signature: string;
  seq: number;
  slot: number;
  blockTime: number;
  err: string | null;
  tx: string;
  meta: string;
  accountKeys: string[];
}

type HistoryTables = {
  chain_signatures: { signature: string; slot: number; err: string | null; created_at: number; seq: number | null; block_time: number | null; tx: string | null; meta: string | null };
  chain_address_signatures: { address: string; seq: number; signature: string };
};

const tables = (db: DbOrTx) => (db as Db).withTables<HistoryTables>();

/** The static account keys of a serialized transaction. */
export function accountKeysOf(bytes: Uint8Array): string[] {
  return VersionedTransaction.deserialize(bytes).message.staticAccountKeys.map((k) => k.toBase58());
}

function tokenBalance(svm: LiteSVM, keys: string[], index: number): RpcTokenBalance | undefined {
  const acc = readStored(svm, keys[index] as string);
  if (!acc || (acc.owner !== TOKEN_PROGRAM && acc.owner !== TOKEN_2022_PROGRAM) || acc.data.length < 165) return undefined;
  // A Token-2022 account longer than the base layout carries its account type (2 = account) at 165.
  if (acc.data.length > 165 && acc.data[165] !== 2) return undefined;
  const data = Buffer.from(acc.data);
  const mint = bs58.encode(data.subarray(0, 32));
  const mintAccount = readStored(svm, mint);
  const decimals = mintAccount && mintAccount.data.length >= 45 ? (mintAccount.data[44] ?? 0) : 0;
  const amount = data.readBigUInt64LE(64).toString();
  return {
    accountIndex: index,
    mint,
    owner: bs58.encode(data.subarray(32, 64)),
    programId: acc.owner,
    uiTokenAmount: { amount, decimals, ...uiAmount(amount, decimals) },
  };
}

/** The decimal forms of a raw token amount, as RPC nodes send them. */
export function uiAmount(amount: string, decimals: number): { uiAmount: number | null; uiAmountString: string } {
  const padded = amount.padStart(decimals + 1, '0');
  const whole = padded.slice(0, padded.length - decimals);
  const fraction = padded.slice(padded.length - decimals).replace(/0+$/, '');
  const text = fraction === '' ? whole : `${whole}.${fraction}`;
  return { uiAmount: Number(text), uiAmountString: text };
}

/** Lamports and token balances of the transaction's accounts, read from LiteSVM. */
export function snapshotBalances(svm: LiteSVM, keys: string[]): BalanceSnapshot {
  const tokens: RpcTokenBalance[] = [];
  keys.forEach((_, i) => {
    const balance = tokenBalance(svm, keys, i);
    if (balance) tokens.push(balance);
  });
  return { lamports: keys.map((k) => readStored(svm, k)?.lamports ?? 0n), tokens };
}

/** The history row of a processed transaction. */
export function historyRecord(input: {
  signature: string;
  seq: number;
  slot: number;
  blockTime: number;
  bytes: Uint8Array;
  keys: string[];
  numSignatures: number;
  before: BalanceSnapshot;
  after: BalanceSnapshot;
  execution: ExecutionMeta;
  errText: string | null;
}): HistoryRecord {
  const { execution } = input;
  const meta: RpcTransactionMeta = {
    err: execution.err,
    status: execution.err === null ? { Ok: null } : { Err: execution.err },
    fee: LAMPORTS_PER_SIGNATURE * input.numSignatures,
    preBalances: input.before.lamports.map(Number),
    postBalances: input.after.lamports.map(Number),
    exactPreBalances: input.before.lamports.map(String),
    exactPostBalances: input.after.lamports.map(String),
    preTokenBalances: input.before.tokens,
    postTokenBalances: input.after.tokens,
    innerInstructions: execution.innerInstructions
      .map((instructions, index) => ({
        index,
        instructions: instructions.map((ix) => ({ programIdIndex: ix.programIdIndex, accounts: ix.accounts, data: bs58.encode(ix.data), stackHeight: ix.stackHeight })),
      }))
      .filter((entry) => entry.instructions.length > 0),
    logMessages: execution.logs,
    computeUnitsConsumed: execution.computeUnits,
    loadedAddresses: { writable: [], readonly: [] },
    rewards: [],
  };
  return {
    signature: input.signature,
    seq: input.seq,
    slot: input.slot,
    blockTime: input.blockTime,
    err: input.errText,
    tx: Buffer.from(input.bytes).toString('base64'),
    meta: JSON.stringify(meta),
    accountKeys: input.keys,
  };
}

/** Writes the transaction's history row and its entries in the by-account index (inside the chain commit). */
export async function insertHistory(trx: DbOrTx, record: HistoryRecord, now: number): Promise<void> {
  await tables(trx)
    .insertInto('chain_signatures')
    .values({ signature: record.signature, slot: record.slot, err: record.err, created_at: now, seq: record.seq, block_time: record.blockTime, tx: record.tx, meta: record.meta })
    .onConflict((oc) => oc.column('signature').doNothing())
    .execute();
  const addresses = [...new Set(record.accountKeys)];
  for (let i = 0; i < addresses.length; i += 200) {
    await tables(trx)
      .insertInto('chain_address_signatures')
      .values(addresses.slice(i, i + 200).map((address) => ({ address, seq: record.seq, signature: record.signature })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

/** The highest history sequence number stored (0 on an empty chain). */
export async function lastHistorySeq(db: Db): Promise<number> {
  const row = await tables(db).selectFrom('chain_signatures').select(sql<number | null>`max(seq)`.as('seq')).executeTakeFirst();
  return Number(row?.seq ?? 0);
}

async function seqOf(db: Db, signature: string | undefined): Promise<number | undefined> {
  if (signature === undefined) return undefined;
  const row = await tables(db).selectFrom('chain_signatures').select('seq').where('signature', '=', signature).executeTakeFirst();
  return row?.seq ?? undefined;
}

/** The address's signatures, newest first, between `until` and `before` (both exclusive). */
export async function signaturesForAddress(
  db: Db,
  address: string,
  options: { until?: string | undefined; before?: string | undefined; limit: number },
): Promise<SignatureEntry[]> {
  const before = await seqOf(db, options.before);
  const until = await seqOf(db, options.until);
  if (options.before !== undefined && before === undefined) return [];
  let query = tables(db)
    .selectFrom('chain_address_signatures as a')
    .innerJoin('chain_signatures as s', 's.signature', 'a.signature')
    .select(['s.signature', 's.slot', 's.meta', 's.block_time'])
    .where('a.address', '=', address);
  if (before !== undefined) query = query.where('a.seq', '<', before);
  if (until !== undefined) query = query.where('a.seq', '>', until);
  const rows = await query.orderBy('a.seq', 'desc').limit(options.limit).execute();
  return rows.map((r) => ({
    signature: r.signature,
    slot: Number(r.slot),
    err: r.meta === null ? null : ((JSON.parse(r.meta) as RpcTransactionMeta).err ?? null),
    blockTime: r.block_time === null ? null : Number(r.block_time),
  }));
}

/** Signatures looked up per statement: well under every bound-parameter limit. */
const OUTCOME_CHUNK = 500;

/**
 * Slot and error (JSON form) of each processed signature, in the order given (null where never
 * processed here): one indexed read per 500 signatures, the transactions' bytes left unread.
 */
export async function signatureOutcomes(db: DbOrTx, signatures: readonly string[]): Promise<Array<{ slot: number; err: unknown } | null>> {
  const found = new Map<string, { slot: number; err: unknown }>();
  for (let i = 0; i < signatures.length; i += OUTCOME_CHUNK) {
    const chunk = [...new Set(signatures.slice(i, i + OUTCOME_CHUNK))];
    const rows = await tables(db).selectFrom('chain_signatures').select(['signature', 'slot', 'err', 'meta']).where('signature', 'in', chunk).execute();
    for (const r of rows) {
      found.set(r.signature, { slot: Number(r.slot), err: r.meta === null ? r.err : ((JSON.parse(r.meta) as RpcTransactionMeta).err ?? null) });
    }
  }
  return signatures.map((s) => found.get(s) ?? null);
}

/**
 * The position of `key` (32 bytes) among a serialized transaction's static account keys, -1 when it
 * is not one of them: the wire layout read in place (signatures, the version prefix, the header, the
 * keys), nothing decoded or encoded. -1 too for bytes too short to hold what they announce.
 */
export function staticKeyIndex(bytes: Uint8Array, key: Uint8Array): number {
  const compactU16 = (at: number): [number, number] => {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = bytes[at + i];
      if (byte === undefined) return [-1, at];
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) return [value, at + i + 1];
    }
    return [value, at + 3];
  };
  const [signatures, afterCount] = compactU16(0);
  if (signatures < 0) return -1;
  let at = afterCount + 64 * signatures;
  if (((bytes[at] ?? 0) & 0x80) !== 0) at += 1; // a versioned message's prefix
  const [keys, keysAt] = compactU16(at + 3);
  if (keys < 0 || keysAt + 32 * keys > bytes.length) return -1;
  for (let k = 0; k < keys; k++) {
    const start = keysAt + 32 * k;
    let same = true;
    for (let b = 0; b < 32; b++) {
      if (bytes[start + b] !== key[b]) {
        same = false;
        break;
      }
    }
    if (same) return k;
  }
  return -1;
}

/**
 * `address`'s lamports around each processed signature (ChainHistory.balancesAt), in the order given,
 * null where never processed here: one indexed read per 500 signatures, the account keys found in
 * the stored bytes in place and the exact balances read from the stored meta.
 */
export async function balancesAt(db: Db, address: string, signatures: readonly string[]): Promise<Array<AccountBalanceChange | null>> {
  const key = bs58.decode(address);
  const found = new Map<string, AccountBalanceChange>();
  for (let i = 0; i < signatures.length; i += OUTCOME_CHUNK) {
    const chunk = [...new Set(signatures.slice(i, i + OUTCOME_CHUNK))];
    const rows = await tables(db).selectFrom('chain_signatures').select(['signature', 'slot', 'block_time', 'tx', 'meta']).where('signature', 'in', chunk).execute();
    for (const r of rows) {
      if (r.tx === null || r.meta === null) continue;
      const meta = JSON.parse(r.meta) as RpcTransactionMeta;
      const index = staticKeyIndex(Buffer.from(r.tx, 'base64'), key);
      const lamports = (exact: string[] | undefined, plain: number[]) => (index < 0 ? 0n : BigInt((exact ?? plain)[index] ?? 0));
      found.set(r.signature, {
        signature: r.signature,
        slot: Number(r.slot),
        blockTime: r.block_time === null ? null : Number(r.block_time),
        err: meta.err ?? null,
        index,
        pre: lamports(meta.exactPreBalances, meta.preBalances),
        post: lamports(meta.exactPostBalances, meta.postBalances),
      });
    }
  }
  return signatures.map((s) => found.get(s) ?? null);
}

/** The stored transaction (bytes and meta), or undefined when this chain never processed it. */
export async function storedTransaction(
  db: Db,
  signature: string,
): Promise<{ slot: number; blockTime: number | null; bytes: Uint8Array; meta: RpcTransactionMeta } | undefined> {
  const row = await tables(db).selectFrom('chain_signatures').selectAll().where('signature', '=', signature).executeTakeFirst();
  if (!row || row.tx === null || row.meta === null) return undefined;
  return { slot: Number(row.slot), blockTime: row.block_time === null ? null : Number(row.block_time), bytes: Buffer.from(row.tx, 'base64'), meta: JSON.parse(row.meta) as RpcTransactionMeta };
}

/** The watcher's view of a stored transaction: instructions resolved to addresses. */
export function toHistoryTransaction(signature: string, stored: { slot: number; blockTime: number | null; bytes: Uint8Array; meta: RpcTransactionMeta }): HistoryTransaction {
  const message = VersionedTransaction.deserialize(stored.bytes).message;
  const keys = message.staticAccountKeys.map((k) => k.toBase58());
  const plain = (list: RpcTokenBalance[]): TokenBalance[] =>
    list.map((b) => ({ accountIndex: b.accountIndex, mint: b.mint, owner: b.owner, amount: b.uiTokenAmount.amount }));
  return {
    signature,
    slot: stored.slot,
    blockTime: stored.blockTime,
    err: stored.meta.err ?? null,
    accountKeys: keys,
    instructions: message.compiledInstructions.map((ix) => ({
      programId: keys[ix.programIdIndex] as string,
      accounts: ix.accountKeyIndexes.map((i) => keys[i] as string),
      data: ix.data,
    })),
    innerInstructions: (stored.meta.innerInstructions ?? []).map((entry) => ({
      index: entry.index,
      instructions: entry.instructions.map((ix) => ({ programId: keys[ix.programIdIndex] as string, accounts: ix.accounts.map((i) => keys[i] as string), data: bs58.decode(ix.data) })),
    })),
    logs: stored.meta.logMessages,
    preTokenBalances: plain(stored.meta.preTokenBalances),
    postTokenBalances: plain(stored.meta.postTokenBalances),
    preBalances: (stored.meta.exactPreBalances ?? stored.meta.preBalances).map(BigInt),
    postBalances: (stored.meta.exactPostBalances ?? stored.meta.postBalances).map(BigInt),
  };
}

/** A stored meta as JSON-RPC's getTransaction answers it: numbers only, as real clients expect. */
export function wireMeta(meta: RpcTransactionMeta): RpcTransactionMeta {
  const { exactPreBalances: _pre, exactPostBalances: _post, ...wire } = meta;
  return wire;
}
