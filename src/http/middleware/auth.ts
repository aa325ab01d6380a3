import type { Context, MiddlewareHandler } from 'hono';
import { findActiveKey } from '../../auth/apiKeys.js';
import type { Db } from '../../db/database.js';
import { ApiError } from '../errors.js';
import { lazyChild } from '../lazyLogger.js';
import { EXPLICIT_SCOPES, type Scope } from '../../auth/scopes.js';
import type { AppEnv, AuthContext } from '../env.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function unauthorized(message: string): ApiError {
  return new ApiError(401, 'unauthorized', message, undefined, undefined, { 'WWW-Authenticate': 'Bearer realm="launch-service"' });
}

/** The presented key: `Authorization: Bearer sk_...` or `x-api-key: sk_...`. */
function presentedKey(c: Context<AppEnv>): string | undefined {
  const header = c.req.header('authorization');
  if (header !== undefined) {
    const match = BEARER.exec(header);
    if (!match?.[1]) throw unauthorized('Authorization header must be "Bearer <key>"');
    return match[1];
  }
  return c.req.header('x-api-key');
}

/**
 * Resolves the caller's key, when one is presented, into `c.get('auth')`.
 * A presented but unknown, revoked or malformed key is recorded in `authError` and raised by
 * {@link rejectRefusedKey} after rate limiting; routes decide whether a key is required at all.
 */
export function authenticate(options: { db: Db }): MiddlewareHandler<AppEnv> {
  return async function authenticate(c, next) {
    try {
      const key = presentedKey(c);
      if (key !== undefined) {
        if (!key.startsWith('sk_') || key.length > 200) throw unauthorized('API key is malformed');
        const row = await findActiveKey(options.db, key);
        if (!row) throw unauthorized('API key is invalid or revoked');
        const scopes = row.scopes.split(',').filter((s) => s !== '');
        c.set('auth', { keyId: row.id, owner: row.owner, scopes, isAdmin: scopes.includes('admin') });
        c.set('logger', lazyChild(c.get('logger'), { keyId: row.id, owner: row.owner }));
      }
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      c.set('authError', error);
    }
    await next();
  };
}

/** Raises the refusal {@link authenticate} recorded. */
export function rejectRefusedKey(): MiddlewareHandler<AppEnv> {
  return async function rejectRefusedKey(c, next) {
    const error = c.get('authError');
    if (error) throw error;
    await next();
  };
}

/** The caller, who must hold `scope` (admin holds every scope but the explicit ones). Throws 401 or 403 otherwise. */
export function requireScope(c: Context<AppEnv>, scope: Scope): AuthContext {
  const auth = requireAuth(c);
  const implied = auth.isAdmin && !EXPLICIT_SCOPES.includes(scope);
  if (!implied && !auth.scopes.includes(scope)) {
    throw new ApiError(403, 'forbidden', `This key lacks the "${scope}" scope`, { required_scope: scope });
  }
  return auth;
}

/** The caller, whatever its scopes. Throws 401 when no key was presented. */
export function requireAuth(c: Context<AppEnv>): AuthContext {
  const auth = c.get('auth');
  if (!auth) throw unauthorized('An API key is required: Authorization: Bearer sk_...');
  return auth;
}
