import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors.js';
import type { AppEnv } from '../env.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Whether a browser page at `origin` may call the service (docs/mcp.md, Origin): an origin of
 * `allowed`, or the service's own origin when it is addressed by a loopback name (the Origin's
 * host, port included, is the request's Host and that name is localhost, 127.0.0.1 or [::1]).
 * A same-name check alone would not do for any other name: a DNS-rebinding page's name is both
 * its Origin and the Host it sends.
 */
export function originAllowed(origin: string, host: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (allowed.has(origin)) return true;
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  if (!/^https?:$/.test(url.protocol) || url.origin !== origin) return false;
  return host !== undefined && url.host === host.toLowerCase() && LOOPBACK.has(url.hostname);
}

/**
 * Refuses a request whose `Origin` is not allowed with 403 (the Model Context Protocol requires
 * servers to validate it, against DNS rebinding). A request without `Origin` (curl, agents, any
 * client that is not a browser) passes.
 */
export function originGuard(options: { allowedOrigins: readonly string[] }): MiddlewareHandler<AppEnv> {
  const allowed = new Set(options.allowedOrigins);
  return async function originGuard(c, next) {
    const origin = c.req.header('origin');
    if (origin !== undefined && !originAllowed(origin, c.req.header('host'), allowed)) {
      throw new ApiError(403, 'forbidden', `Origin ${JSON.stringify(origin.slice(0, 200))} is not allowed; list it in MCP_ALLOWED_ORIGINS`, { origin: origin.slice(0, 200) });
    }
    await next();
  };
}
