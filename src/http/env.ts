import type { Logger } from 'pino';

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
}

export interface AppEnv {
  Variables: AppVariables;
}

export const SCOPES = ['launches:read', 'launches:write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
