import type { MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Clock } from '../../lib/clock.js';
import { ApiError } from '../errors.js';
import type { AppEnv } from '../env.js';

interface Window {
  startedAt: number;
  count: number;
}

/** Fixed one-minute windows per key (or per client IP when anonymous). */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(
    readonly limit: number,
    private readonly clock: Clock,
    readonly windowMs = 60_000,
  ) {}

  /** Counts one request (unless `peek`) and tells what is left. */
  take(subject: string, peek = false): { allowed: boolean; remaining: number; resetSeconds: number } {
    const now = this.clock.now();
    this.sweep(now);
    let window = this.windows.get(subject);
    if (!window || now - window.startedAt >= this.windowMs) {
      window = { startedAt: now, count: 0 };
      if (!peek) this.windows.set(subject, window);
    }
    const allowed = window.count < this.limit;
    if (allowed && !peek) window.count += 1;
    const resetSeconds = Math.max(1, Math.ceil((window.startedAt + this.windowMs - now) / 1000));
    return { allowed, remaining: Math.max(0, this.limit - window.count), resetSeconds };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const [subject, window] of this.windows) if (now - window.startedAt >= this.windowMs) this.windows.delete(subject);
  }
}

function clientIp(c: Parameters<MiddlewareHandler<AppEnv>>[0]): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown'; // app.request() in tests has no socket
  }
}

/**
 * Sets X-RateLimit-* on every API response and answers 429 with Retry-After over the limit.
 * `exempt` paths (the health probe) show the budget without spending it, so monitors are never throttled.
 */
export function rateLimit(options: { limiter: RateLimiter; exempt?: (path: string) => boolean }): MiddlewareHandler<AppEnv> {
  return async function rateLimit(c, next) {
    const auth = c.get('auth');
    const subject = auth ? `key:${auth.keyId}` : `ip:${clientIp(c)}`;
    const peek = options.exempt?.(c.req.path) ?? false;
    const verdict = options.limiter.take(subject, peek);
    const headers = {
      'X-RateLimit-Limit': String(options.limiter.limit),
      'X-RateLimit-Remaining': String(verdict.remaining),
      'X-RateLimit-Reset': String(verdict.resetSeconds),
    };
    if (!verdict.allowed && !peek) {
      throw new ApiError(429, 'rate_limited', `Rate limit of ${options.limiter.limit} requests per minute exceeded`, {
        limit: options.limiter.limit,
        retry_after_seconds: verdict.resetSeconds,
      }, undefined, { ...headers, 'Retry-After': String(verdict.resetSeconds) });
    }
    try {
      await next();
    } finally {
      for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    }
  };
}
