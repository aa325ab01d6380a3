import { createHash } from 'node:crypto';
import type { DbOrTx } from '../db/database.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function isValidIdempotencyKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** A hash of the request body that ignores key order and whitespace. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export type IdempotencyClaim =
  | { kind: 'claimed' }
  | { kind: 'replay'; launchId: string }
  | { kind: 'in_progress' }
  | { kind: 'reused' };

/**
 * Claims an idempotency key for this owner, or tells why it cannot: the first request finished
 * (replay), is still running (in progress) or had another body (reused). An expired key is reclaimed.
 */
export async function claimIdempotencyKey(db: DbOrTx, args: { owner: string; key: string; hash: string; now: number }): Promise<IdempotencyClaim> {
  const existing = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('owner', '=', args.owner)
    .where('key', '=', args.key)
    .executeTakeFirst();
  if (existing && existing.expires_at > args.now) {
    if (existing.request_hash !== args.hash) return { kind: 'reused' };
    if (existing.state === 'in_progress' || existing.launch_id === null) return { kind: 'in_progress' };
    return { kind: 'replay', launchId: existing.launch_id };
  }
  if (existing) await releaseIdempotencyKey(db, args.owner, args.key);
  const inserted = await db
    .insertInto('idempotency_keys')
    .values({
      owner: args.owner,
      key: args.key,
      request_hash: args.hash,
      state: 'in_progress',
      launch_id: null,
      response_status: null,
      created_at: args.now,
      expires_at: args.now + IDEMPOTENCY_TTL_MS,
    })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0 ? { kind: 'claimed' } : { kind: 'in_progress' };
}

/** Records the launch the key produced. */
export async function completeIdempotencyKey(db: DbOrTx, args: { owner: string; key: string; launchId: string; status: number }): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'complete', launch_id: args.launchId, response_status: args.status })
    .where('owner', '=', args.owner)
    .where('key', '=', args.key)
    .execute();
}

/** Frees a key whose request was refused, so the caller may fix the body and retry with it. */
export async function releaseIdempotencyKey(db: DbOrTx, owner: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('owner', '=', owner).where('key', '=', key).execute();
}

/** Deletes keys past their 24 h retention. */
export async function purgeExpiredIdempotencyKeys(db: DbOrTx, now: number): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
