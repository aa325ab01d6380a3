import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context, MiddlewareHandler } from 'hono';
import { resolveClientAddress, type TrustProxy } from '../config/trustProxy.js';

export { parseTrustProxy, resolveClientAddress, type TrustProxy } from '../config/trustProxy.js';

const peerOf = (c: Context): string => {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown'; // app.request() in tests has no socket
  }
};

/** Sets `clientAddress` for every request (the sign-in bucket, per-address limits, the event stream's cap). */
export function clientAddressMiddleware(trust: TrustProxy): MiddlewareHandler {
  return async (c, next) => {
    c.set('clientAddress' as never, resolveClientAddress(peerOf(c), c.req.header('x-forwarded-for'), trust) as never);
    await next();
  };
}

/** The caller's address as {@link clientAddressMiddleware} resolved it (the socket's peer without it). */
export function clientAddressOf(c: Context): string {
  const resolved = c.get('clientAddress' as never) as string | undefined;
  return resolved ?? peerOf(c);
}
