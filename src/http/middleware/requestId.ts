import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { AppEnv } from '../env.js';
import { lazyChild } from '../lazyLogger.js';

const SANE_ID = /^[\x20-\x7e]{1,200}$/;

/** True when a caller-supplied request id is printable ASCII of at most 200 chars. */
export function isSaneRequestId(value: string | undefined): value is string {
  return value !== undefined && SANE_ID.test(value) && value.trim() === value && value.length > 0;
}

/**
 * Echoes a sane `X-Request-ID`, replaces a missing or insane one with a UUID, binds a child logger
 * and writes one log line per request (id, method, path, status, duration).
 */
export function requestContext(options: { logger: Logger; apiVersion: string; now?: () => number }): MiddlewareHandler<AppEnv> {
  const now = options.now ?? (() => performance.now());
  return async function requestContext(c, next) {
    const supplied = c.req.header('x-request-id');
    const requestId = isSaneRequestId(supplied) ? supplied : randomUUID();
    c.set('requestId', requestId);
    c.set('logger', lazyChild(options.logger, { requestId }));
    c.set('auth', undefined);
    c.set('authError', undefined);
    const started = now();
    try {
      await next();
    } finally {
      // Set on the finished response's headers: c.header() after next() would rebuild the response
      // around its body stream, which pushes @hono/node-server off its fast path (~3x slower).
      c.res.headers.set('X-Request-ID', requestId);
      c.res.headers.set('Service-Api-Version', options.apiVersion);
      // Monitors probe health every few seconds: an answered probe is debug, not a line per probe.
      const level = c.req.path === '/api/health' && c.res.status < 500 ? 'debug' : 'info';
      // The line a child logger bound to the request id would write, without creating one.
      if (options.logger.isLevelEnabled(level)) {
        options.logger[level]({ requestId, method: c.req.method, path: c.req.path, status: c.res.status, durationMs: Math.round((now() - started) * 100) / 100 }, 'request');
      }
    }
  };
}
