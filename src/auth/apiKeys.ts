import { createHash, randomBytes } from 'node:crypto';
import { compiledQuery } from '../db/compiledQuery.js';
import type { DbOrTx } from '../db/database.js';
import type { ApiKeyRow } from '../db/schema.js';
import { newId } from '../lib/ids.js';
import { SCOPES, type Scope } from './scopes.js';

/** Keys carry 256 bits of entropy, so a fast hash is safe to store (no salt or KDF needed). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function generateApiKey(): string {
  return `sk_${randomBytes(32).toString('base64url')}`;
}

/** Validates a comma-separated scope list; returns the unknown ones. */
export function unknownScopes(scopes: string[]): string[] {
  return scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
}

export interface CreatedKey {
  id: string;
  key: string;
  owner: string;
  scopes: Scope[];
}

/** Creates a key; the plaintext is returned once and only its hash is stored. */
export async function createApiKey(
  db: DbOrTx,
  args: { owner: string; scopes: Scope[]; name?: string; now: number },
): Promise<CreatedKey> {
  const key = generateApiKey();
  const id = newId('key', 8);
  await db
    .insertInto('api_keys')
    .values({
      id,
      owner: args.owner,
      name: args.name ?? null,
      prefix: key.slice(0, 10),
      key_hash: hashApiKey(key),
      scopes: args.scopes.join(','),
      created_at: args.now,
      revoked_at: null,
      last_used_at: null,
    })
    .execute();
  return { id, key, owner: args.owner, scopes: args.scopes };
}

// Every authenticated request runs it: compiled once, not rebuilt by kysely per request.
const activeKeyByHash = compiledQuery<{ hash: string }, ApiKeyRow>((db, p) => db.selectFrom('api_keys').selectAll().where('key_hash', '=', p.hash).where('revoked_at', 'is', null));

/** The active (not revoked) key with this plaintext, if any. */
export async function findActiveKey(db: DbOrTx, key: string): Promise<ApiKeyRow | undefined> {
  return activeKeyByHash.first(db, { hash: hashApiKey(key) });
}

export async function listApiKeys(db: DbOrTx): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
}

/** Revokes a key by id; false when no active key has that id. */
export async function revokeApiKey(db: DbOrTx, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function countApiKeys(db: DbOrTx): Promise<number> {
  const row = await db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
