import type { Db } from '../../db/database.js';
import { insertHistory, type HistoryRecord } from './history.js';
import type { StoredAccount } from './svm.js';

/** The table migration 003 adds; typed here so the shared schema stays untouched. */
export interface ChainSignaturesTable {
  signature: string;
  slot: number;
  err: string | null;
  created_at: number;
}

/** What a processed transaction changes: touched accounts (null = closed) and its signature. */
export interface ProcessedWrite {
  accounts: Array<{ address: string; account: StoredAccount | null }>;
  signature?: { signature: string; slot: number; err: string | null };
  /** The transaction's bytes, meta and account index entries (replaces `signature` when given). */
  history?: HistoryRecord;
}

// Rent-exempt accounts carry u64::MAX as their rent epoch on a real cluster.
const RENT_EXEMPT_EPOCH = '18446744073709551615';

function chainDb(db: Db) {
  return db.withTables<{ chain_signatures: ChainSignaturesTable }>();
}

/** Reads every persisted account (restored into LiteSVM at start). */
export async function loadAccounts(db: Db): Promise<StoredAccount[]> {
  const rows = await db.selectFrom('chain_accounts').selectAll().execute();
  return rows.map((r) => ({
    address: r.address,
    lamports: BigInt(r.lamports),
    owner: r.owner,
    executable: r.executable === 1,
    data: Buffer.from(r.data, 'base64'),
  }));
}

/** Commits the accounts a transaction touched and its signature in one database transaction. */
export async function saveProcessed(db: Db, write: ProcessedWrite, now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const { address, account } of write.accounts) {
      if (account === null) {
        await trx.deleteFrom('chain_accounts').where('address', '=', address).execute();
        continue;
      }
      const row = {
        address,
        lamports: account.lamports.toString(),
        owner: account.owner,
        executable: account.executable ? 1 : 0,
        rent_epoch: RENT_EXEMPT_EPOCH,
        data: Buffer.from(account.data).toString('base64'),
        updated_at: now,
      };
      await trx
        .insertInto('chain_accounts')
        .values(row)
        .onConflict((oc) => oc.column('address').doUpdateSet({ ...row }))
        .execute();
    }
    if (write.history) {
      await insertHistory(trx, write.history, now);
    } else if (write.signature) {
      const s = write.signature;
      await chainDb(trx as unknown as Db)
        .insertInto('chain_signatures')
        .values({ signature: s.signature, slot: s.slot, err: s.err, created_at: now })
        .onConflict((oc) => oc.column('signature').doNothing())
        .execute();
    }
  });
}

/** The recorded outcome of a processed signature, or undefined when never processed here. */
export async function findSignature(db: Db, signature: string): Promise<ChainSignaturesTable | undefined> {
  return chainDb(db).selectFrom('chain_signatures').selectAll().where('signature', '=', signature).executeTakeFirst();
}

/** Reads a `service_meta` value. */
export async function getMeta(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('service_meta').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

/** Inserts a `service_meta` value unless one exists; returns the value that is stored. */
export async function putMetaIfAbsent(db: Db, key: string, value: string): Promise<string> {
  await db.insertInto('service_meta').values({ key, value }).onConflict((oc) => oc.column('key').doNothing()).execute();
  return (await getMeta(db, key)) ?? value;
}
