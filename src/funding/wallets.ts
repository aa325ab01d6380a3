import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Keypair } from '@solana/web3.js';
import { keypairFromSeed } from '../chain/ed25519.js';
import type { SecretBox } from '../crypto/secretBox.js';
import { compiledQuery } from '../db/compiledQuery.js';
import type { DbOrTx } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import type { FundingWalletRow } from '../db/schema.js';

/**
 * Every column of a wallet row, its lamport amounts read as decimal text: a bigint column read as a
 * JS number rounds from 2^53 on (SQLite), so no read of the row goes through `selectAll`.
 */
export function selectWallets(db: DbOrTx) {
  const text = (column: 'max_lamports_per_launch' | 'max_lamports_per_day' | 'low_balance_lamports' | 'seen_balance' | 'withdrawing_lamports') => sql<string | null>`cast(${sql.ref(column)} as text)`.as(column);
  return db
    .selectFrom('funding_wallets')
    .select(['owner', 'address', 'seed_enc', 'max_launches_per_day', 'low_balance', 'withdrawing_until', 'created_at', 'updated_at'])
    .select([text('max_lamports_per_launch'), text('max_lamports_per_day'), text('low_balance_lamports'), text('seen_balance'), text('withdrawing_lamports')]);
}

/** One owner's wallet row, compiled once (compiledQuery.ts): read on every step of an owner-funded launch. */
const walletStatement = compiledQuery<{ owner: string }, FundingWalletRow>((db, p) => selectWallets(db).where('owner', '=', p.owner));
/** The same, locked for the rest of the transaction on PostgreSQL (the dialect branch is taken once per dialect). */
const lockedWalletStatement = compiledQuery<{ owner: string }, FundingWalletRow>((db, p) => {
  const query = selectWallets(db).where('owner', '=', p.owner);
  return isPostgres(db) ? query.forUpdate() : query;
});

/**
 * What a step of an owner-funded launch needs of its payer, in one read: the owner's wallet (read
 * on every step, so a wallet rotated or replaced mid-launch is seen at the next step) and what the
 * launch's open reservation has left, exact, from `funding_open_reservations` (the ledger's index
 * of open reservations, kept by triggers in each entry's transaction, migration 049): null when
 * the launch reserved nothing or its reservation is closed.
 */
export async function findPayer(db: DbOrTx, owner: string, launchId: string): Promise<{ address: string; seed_enc: string; left: bigint | null } | undefined> {
  const row = await payerStatement.first(db, { owner, launchId });
  return row && { address: row.address, seed_enc: row.seed_enc, left: row.left === null ? null : BigInt(row.left) };
}
const payerStatement = compiledQuery<{ owner: string; launchId: string }, { address: string; seed_enc: string; left: string | null }>((db, p) =>
  db
    .selectFrom('funding_wallets as w')
    .leftJoin('funding_open_reservations as r', (join) => join.onRef('r.owner', '=', 'w.owner').on('r.launch_id', '=', p.launchId))
    .select(['w.address', 'w.seed_enc', sql<string | null>`cast(r.reserved_lamports - r.spent_lamports as text)`.as('left')])
    .where('w.owner', '=', p.owner),
);

/** The owner's funding wallet, or undefined before its first use. */
export async function findWallet(db: DbOrTx, owner: string): Promise<FundingWalletRow | undefined> {
  return walletStatement.first(db, { owner });
}

/**
 * Whether `owner` is one the service knows: it has a funding wallet or any API key (revoked ones
 * count). Setting limits for any other name would make a wallet (and outside production airdrop
 * to it) for an owner nobody can use (docs/funding.md, "Limits").
 */
export async function ownerKnown(db: DbOrTx, owner: string): Promise<boolean> {
  if (await findWallet(db, owner)) return true;
  return (await db.selectFrom('api_keys').select('id').where('owner', '=', owner).limit(1).executeTakeFirst()) !== undefined;
}

/** The owner's wallet row, locked for the rest of the transaction on PostgreSQL. */
export async function lockWallet(trx: DbOrTx, owner: string): Promise<FundingWalletRow> {
  const row = await lockedWalletStatement.first(trx, { owner });
  if (!row) throw new Error(`${owner} has no funding wallet`);
  return row;
}

/**
 * The owner's funding wallet, made on first use: a fresh keypair whose seed is sealed under
 * SECRET_KEY. Insert-if-absent, so instances racing on an owner's first request all end up with
 * the one row that won; `created` is true only for the caller whose row it is. `beforeInsert` runs
 * with the new address before the row exists (the development airdrop): a wallet any instance can
 * see is already funded. `onCreated` runs in the transaction that inserts the row, when it is this
 * caller's.
 */
export async function ensureWallet(
  db: DbOrTx,
  box: SecretBox,
  owner: string,
  now: number,
  beforeInsert?: (address: string) => Promise<void>,
  onCreated?: (trx: DbOrTx, wallet: FundingWalletRow) => Promise<void>,
): Promise<{ wallet: FundingWalletRow; created: boolean }> {
  const existing = await findWallet(db, owner);
  if (existing) return { wallet: existing, created: false };
  const seed = randomBytes(32);
  const address = keypairFromSeed(seed).publicKey.toBase58();
  await beforeInsert?.(address);
  // The wallet and what is made with it (its watch, `onCreated`) commit together.
  const insert = (trx: DbOrTx) => insertWallet(trx, box, owner, now, seed, address, onCreated);
  return onCreated && !db.isTransaction ? db.transaction().execute(insert) : insert(db);
}

async function insertWallet(
  db: DbOrTx,
  box: SecretBox,
  owner: string,
  now: number,
  seed: Buffer,
  address: string,
  onCreated?: (trx: DbOrTx, wallet: FundingWalletRow) => Promise<void>,
): Promise<{ wallet: FundingWalletRow; created: boolean }> {
  await db
    .insertInto('funding_wallets')
    .values({
      owner,
      address,
      seed_enc: box.seal(seed.toString('base64')),
      max_lamports_per_launch: null,
      max_lamports_per_day: null,
      max_launches_per_day: null,
      low_balance_lamports: null,
      seen_balance: null,
      withdrawing_lamports: null,
      withdrawing_until: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('owner').doNothing())
    .execute();
  seed.fill(0);
  const wallet = await findWallet(db, owner);
  if (!wallet) throw new Error(`funding wallet of ${owner} vanished after insert`);
  const created = wallet.address === address;
  if (created) await onCreated?.(db, wallet);
  return { wallet, created };
}

/**
 * Notes the wallet's balance as the deposit watch saw it (`seen_balance`) and keeps the low-balance
 * flag: set while the balance is below the owner's `low_balance_lamports`, cleared (re-armed) when
 * it is not. Returns the threshold when this balance crosses below it (the flag was clear), so the
 * caller reports the crossing once. Run in the transaction that commits the watch's progress; the
 * row is locked on PostgreSQL so a concurrent limit change is seen whole.
 */
export async function noteWalletBalance(trx: DbOrTx, owner: string, balance: number | bigint, now: number): Promise<{ crossedBelow: bigint } | undefined> {
  // The threshold is read as text and compared as a bigint: exact above 2^53.
  let query = trx.selectFrom('funding_wallets').select([sql<string | null>`cast(low_balance_lamports as text)`.as('low_balance_lamports'), 'low_balance']).where('owner', '=', owner);
  if (isPostgres(trx)) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row) return undefined;
  const threshold = row.low_balance_lamports === null ? null : BigInt(row.low_balance_lamports);
  const below = threshold !== null && BigInt(balance) < threshold;
  await trx.updateTable('funding_wallets').set({ seen_balance: BigInt(balance), low_balance: below ? 1 : 0, updated_at: now }).where('owner', '=', owner).execute();
  return below && Number(row.low_balance) === 0 ? { crossedBelow: threshold } : undefined;
}

/** The wallet's 32-byte seed (what the step runner signs with); never logged or returned. */
export function walletSeed(box: SecretBox, wallet: Pick<FundingWalletRow, 'seed_enc' | 'address'>): Uint8Array {
  const seed = Buffer.from(box.open(wallet.seed_enc), 'base64');
  if (seed.length !== 32) throw new Error(`funding wallet ${wallet.address}: sealed seed is malformed`);
  return seed;
}

/** The wallet's keypair. */
export function walletSigner(box: SecretBox, wallet: Pick<FundingWalletRow, 'seed_enc' | 'address'>): Keypair {
  const keypair = keypairFromSeed(walletSeed(box, wallet));
  if (keypair.publicKey.toBase58() !== wallet.address) throw new Error(`funding wallet ${wallet.address}: sealed seed does not match its address`);
  return keypair;
}

/**
 * Re-seals every wallet sealed under `previous` with `current` (a SECRET_KEY rotation): the
 * keypairs never change, so no deposit is ever stranded. Wallets `current` already opens are left
 * alone; one neither opens is reported, not touched. Returns how many were re-sealed.
 */
export async function resealWallets(db: DbOrTx, current: SecretBox, previous: SecretBox, now: number): Promise<{ resealed: number; unreadable: string[] }> {
  const rows = await db.selectFrom('funding_wallets').select(['owner', 'address', 'seed_enc']).execute();
  let resealed = 0;
  const unreadable: string[] = [];
  for (const row of rows) {
    try {
      current.open(row.seed_enc);
      continue;
    } catch {
      // Not sealed under the current key: try the previous one.
    }
    let plain: string;
    try {
      plain = previous.open(row.seed_enc);
    } catch {
      unreadable.push(row.owner);
      continue;
    }
    await db.updateTable('funding_wallets').set({ seed_enc: current.seal(plain), updated_at: now }).where('owner', '=', row.owner).where('seed_enc', '=', row.seed_enc).execute();
    resealed += 1;
  }
  return { resealed, unreadable };
}
