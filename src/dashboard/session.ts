import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/database.js';

/** Who is signed in: the API key's owner and scopes, and the session's CSRF token. */
export interface DashboardUser {
  keyId: string;
  owner: string;
  scopes: string[];
  isAdmin: boolean;
  csrf: string;
}

const hash = (token: string) => createHash('sha256').update(token).digest('hex');
export const newToken = () => randomBytes(32).toString('base64url');

/** Opens a session for an API key; returns the cookie token (only its hash is stored). */
export async function createSession(db: Db, args: { keyId: string; now: number; ttlMs: number }): Promise<string> {
  const token = newToken();
  await db
    .insertInto('dashboard_sessions')
    .values({ id_hash: hash(token), key_id: args.keyId, csrf_token: newToken(), created_at: args.now, expires_at: args.now + args.ttlMs })
    .execute();
  // Expired sessions are swept on sign-in, so the table stays as small as the live sessions.
  await db.deleteFrom('dashboard_sessions').where('expires_at', '<=', args.now).execute();
  return token;
}

/** The user of a live session whose key is still active; undefined when expired, signed out or revoked. */
export async function findSession(db: Db, token: string, now: number): Promise<DashboardUser | undefined> {
  const row = await db
    .selectFrom('dashboard_sessions as s')
    .innerJoin('api_keys as k', 'k.id', 's.key_id')
    .select(['k.id as keyId', 'k.owner', 'k.scopes', 's.csrf_token'])
    .where('s.id_hash', '=', hash(token))
    .where('s.expires_at', '>', now)
    .where('k.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  const scopes = row.scopes.split(',').filter((s) => s !== '');
  return { keyId: row.keyId, owner: row.owner, scopes, isAdmin: scopes.includes('admin'), csrf: row.csrf_token };
}

export async function deleteSession(db: Db, token: string): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('id_hash', '=', hash(token)).execute();
}

/** Constant-time equality of two tokens. */
export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a === b;
}
