import { createHash, createHmac } from 'node:crypto';
import type { DbOrTx } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import { MAX_JSON_DEPTH } from '../lib/jsonDepth.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/**
 * On PostgreSQL, how old a key left in progress must be before another request may take it over.
 * Several instances share the keys and each knows only its own requests, so "no request of mine
 * holds it" says nothing about the others; a request never runs this long (HTTP_REQUEST_TIMEOUT,
 * 30 s by default, ends it), so a key older than this was left by a process that died.
 */
export const IN_PROGRESS_ABANDONED_MS = 120_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function isValidIdempotencyKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

const HASH_PREFIX = 'h1:';

/** The key of request hashes, derived from SECRET_KEY (never the key itself). */
export function requestHashKey(secretKey: Buffer): Buffer {
  return createHmac('sha256', secretKey).update('idempotency-request-hash/v1').digest();
}

/**
 * A keyed hash of the request body that ignores key order and whitespace. The body carries the
 * webhook secret, so a plain digest would let whoever reads the table confirm a guessed secret
 * offline; keyed with a secret derived from SECRET_KEY it confirms nothing. Shape:
 * `h1:` + HMAC(key, SHA-256(canonical JSON)), so stored legacy digests can be upgraded in place.
 */
export function requestHash(body: unknown, key: Buffer): string {
  return keyDigest(key, createHash('sha256').update(canonicalJson(body)).digest('hex'));
}

function keyDigest(key: Buffer, digestHex: string): string {
  return HASH_PREFIX + createHmac('sha256', key).update(digestHex).digest('hex');
}

/**
 * Re-keys request hashes stored before they were keyed (plain SHA-256 hex), so the table holds no
 * unkeyed digest and those keys still replay. Idempotent; run at start.
 */
export async function upgradeLegacyRequestHashes(db: DbOrTx, key: Buffer): Promise<number> {
  const legacy = await db.selectFrom('idempotency_keys').select(['owner', 'key', 'request_hash']).where('request_hash', 'not like', `${HASH_PREFIX}%`).execute();
  for (const row of legacy) {
    await db
      .updateTable('idempotency_keys')
      .set({ request_hash: keyDigest(key, row.request_hash) })
      .where('owner', '=', row.owner)
      .where('key', '=', row.key)
      .where('request_hash', '=', row.request_hash)
      .execute();
  }
  return legacy.length;
}

/** The body is nested deeper than any request may be (the HTTP layer refuses such bodies first). */
export class JsonTooDeepError extends RangeError {
  constructor() {
    super(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    this.name = 'JsonTooDeepError';
  }
}

/** Canonical JSON (sorted keys, no whitespace); recursion is bounded by {@link MAX_JSON_DEPTH}. */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_JSON_DEPTH) throw new JsonTooDeepError();
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v, depth + 1)}`).join(',')}}`;
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
 * (replay), is still running (in progress) or had another body (reused). An expired key is
 * reclaimed, and so is one left in progress by a request that is no longer running (`running`
 * says which of this process's are: a crash between claiming the key and creating the launch). On
 * PostgreSQL another instance's request may be running it, so a key in progress is taken over only
 * once it is {@link IN_PROGRESS_ABANDONED_MS} old; until then the answer is in progress. The launch
 * and the key's completion commit together, so a key in progress never has a launch: it is free again.
 */
export async function claimIdempotencyKey(
  db: DbOrTx,
  args: { owner: string; key: string; hash: string; now: number; running?: (owner: string, key: string) => boolean },
): Promise<IdempotencyClaim> {
  const existing = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('owner', '=', args.owner)
    .where('key', '=', args.key)
    .executeTakeFirst();
  if (existing && existing.expires_at > args.now) {
    if (existing.request_hash !== args.hash) return { kind: 'reused' };
    const abandoned =
      existing.state === 'in_progress' &&
      args.running !== undefined &&
      !args.running(args.owner, args.key) &&
      (!isPostgres(db) || existing.created_at <= args.now - IN_PROGRESS_ABANDONED_MS);
    if (!abandoned) {
      if (existing.state === 'in_progress' || existing.launch_id === null) return { kind: 'in_progress' };
      return { kind: 'replay', launchId: existing.launch_id };
    }
  }
  if (existing) {
    // Only the row we read: a concurrent claim that replaced it meanwhile keeps its key.
    await db
      .deleteFrom('idempotency_keys')
      .where('owner', '=', args.owner)
      .where('key', '=', args.key)
      .where('created_at', '=', existing.created_at)
      .where('state', '=', existing.state)
      .execute();
  }
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

/**
 * Frees a key whose request was refused, so the caller may fix the body and retry with it. With
 * `onlyInProgress`, a key whose launch committed (state complete) is never freed.
 */
export async function releaseIdempotencyKey(db: DbOrTx, owner: string, key: string, options: { onlyInProgress?: boolean } = {}): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('owner', '=', owner)
    .where('key', '=', key)
    .$if(options.onlyInProgress === true, (q) => q.where('state', '=', 'in_progress'))
    .execute();
}

/** Deletes keys past their 24 h retention. */
export async function purgeExpiredIdempotencyKeys(db: DbOrTx, now: number): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
