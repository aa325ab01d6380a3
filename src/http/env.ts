import type { Logger } from 'pino';
import type { ApiError } from './errors.js';

/** Who is calling, resolved from the bearer key by the auth middleware. */
export interface AuthContext {
  keyId: string;
  owner: string;
  scopes: string[];
  /** `admin` scope: sees every owner's resources. */
  isAdmin: boolean;
}

/** Variables every handler can read with `c.get(...)`. */
export interface AppVariables {
  requestId: string;
  logger: Logger;
  auth: AuthContext | undefined;
  /** A presented key that was refused; raised after rate limiting so the refusal is counted too. */
  authError: ApiError | undefined;
  /**
   * Counts the calls a request carries beyond the first against the caller's rate limit (an `/mcp`
   * batch); throws 429 when they do not fit. Set by the rate limit middleware.
   */
  countCalls: (calls: number) => Promise<void>;
}

export interface AppEnv {
  Variables: AppVariables;
}
