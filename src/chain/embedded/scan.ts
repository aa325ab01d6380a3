import { PublicKey, type AccountInfo } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Db } from '../../db/database.js';
import type { AccountFilter } from '../history.js';

/** True when the account data passes every filter (`dataSize`, `memcmp` with base58 bytes). */
export function matchesFilters(data: Uint8Array, filters: AccountFilter[]): boolean {
  return filters.every((filter) => {
    if ('dataSize' in filter) return data.length === filter.dataSize;
    const bytes = bs58.decode(filter.memcmp.bytes);
    const { offset } = filter.memcmp;
    if (offset + bytes.length > data.length) return false;
    return bytes.every((b, i) => data[offset + i] === b);
  });
}

/**
 * The accounts a program owns, from the persisted chain state (every account a transaction
 * touched is committed there with its owner), filtered as `getProgramAccounts` filters.
 */
export async function scanAccounts(db: Db, programId: PublicKey, filters: AccountFilter[]): Promise<Array<{ pubkey: PublicKey; account: AccountInfo<Buffer> }>> {
  const rows = await db.selectFrom('chain_accounts').selectAll().where('owner', '=', programId.toBase58()).orderBy('address').execute();
  const found: Array<{ pubkey: PublicKey; account: AccountInfo<Buffer> }> = [];
  for (const row of rows) {
    const data = Buffer.from(row.data, 'base64');
    if (!matchesFilters(data, filters)) continue;
    found.push({
      pubkey: new PublicKey(row.address),
      account: { data, executable: row.executable === 1, lamports: Number(row.lamports), owner: programId, rentEpoch: Number.MAX_SAFE_INTEGER },
    });
  }
  return found;
}
