import type { MiddlewareHandler } from 'hono';
import { clientAddressOf } from '../clientAddress.js';
import type { Db } from '../../db/database.js';
import { isPostgres } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { ApiError } from '../errors.js';
import type { AppEnv } from '../env.js';

interface Window {
  startedAt: number;
  count: number;
}

export interface RateVerdict {
  allowed: boolean;
  remaining: number;
  resetSeconds: number;
}

/** Counts API requests per subject (`key:<id>`, or `ip:<addr>` when anonymous) in fixed windows. */
export interface RequestLimiter {
  readonly limit: number;
  /**
   * Counts `cost` requests (default one; unless `peek`) and tells what is left: refused when fewer
   * than `cost` remain in the window.
   */
  take(subject: string, peek?: boolean, cost?: number): RateVerdict | Promise<RateVerdict>;
}

/**
 * The limiter for this database (docs/architecture.md, SQLite and PostgreSQL): on SQLite one process owns the data directory, so its
 * windows live in memory (no write per request); on PostgreSQL several instances share the budget
 * through the `rate_limit_windows` table.
 */
export function createRateLimiter(deps: { db: Db; clock: Clock; logger: Logger; limit: number }): RequestLimiter {
  return isPostgres(deps.db) ? new SharedRateLimiter(deps.limit, deps.db, deps.clock, deps.logger) : new RateLimiter(deps.limit, deps.clock);
}

/** Fixed one-minute windows per key (or per client IP when anonymous), in this process's memory. */
export class RateLimiter implements RequestLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(
    readonly limit: number,
    private readonly clock: Clock,
    readonly windowMs = 60_000,
  ) {}

  /** Counts `cost` requests (unless `peek`; a refused take counts nothing) and tells what is left. */
  take(subject: string, peek = false, cost = 1): RateVerdict {
    const now = this.clock.now();
    this.sweep(now);
    let window = this.windows.get(subject);
    if (!window || now - window.startedAt >= this.windowMs) {
      window = { startedAt: now, count: 0 };
      if (!peek) this.windows.set(subject, window);
    }
    const allowed = window.count + cost <= this.limit;
    if (allowed && !peek) window.count += cost;
    const resetSeconds = Math.max(1, Math.ceil((window.startedAt + this.windowMs - now) / 1000));
    return { allowed, remaining: Math.max(0, this.limit - window.count), resetSeconds };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const [subject, window] of this.windows) if (now - window.startedAt >= this.windowMs) this.windows.delete(subject);
  }
}

/**
 * Fixed windows shared by every instance on one database: each request is one atomic upsert
 * (`insert … on conflict do update set count = count + 1 returning count`, the same statement on
 * SQLite and PostgreSQL), so N instances together admit `limit` requests per window, not N × limit.
 * Windows are aligned to multiples of `windowMs` on each instance's clock, so instances agree on
 * them (a few ms of skew moves a request into the neighbouring window at most). Past windows are
 * deleted once per window, keeping the previous one (another instance whose clock has not crossed
 * the boundary yet still counts into it). A peek (the health probe's headers) reads no database: it
 * answers from the highest count this instance saw for the subject in the current window, so health
 * never waits on the pool. When the database cannot answer, the request is let through and logged:
 * the limiter protects the service, it is not a reason to refuse every caller.
 */
export class SharedRateLimiter implements RequestLimiter {
  private lastSweep = 0;
  /** The highest count this instance saw per subject, in window `seenWindow` (for peeks). */
  private seen = new Map<string, number>();
  private seenWindow = 0;

  constructor(
    readonly limit: number,
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly windowMs = 60_000,
  ) {}

  async take(subject: string, peek = false, cost = 1): Promise<RateVerdict> {
    const now = this.clock.now();
    const windowStart = now - (now % this.windowMs);
    const resetSeconds = Math.max(1, Math.ceil((windowStart + this.windowMs - now) / 1000));
    try {
      if (windowStart !== this.seenWindow) {
        this.seen.clear();
        this.seenWindow = windowStart;
      }
      let count: number;
      if (peek) {
        count = this.seen.get(subject) ?? 0;
      } else {
        await this.sweep(windowStart);
        const row = await this.db
          .insertInto('rate_limit_windows')
          .values({ subject, window_start: windowStart, count: cost })
          .onConflict((oc) => oc.columns(['subject', 'window_start']).doUpdateSet((eb) => ({ count: eb('rate_limit_windows.count', '+', cost) })))
          .returning('count')
          .executeTakeFirstOrThrow();
        count = Number(row.count);
        this.seen.set(subject, Math.max(count, this.seen.get(subject) ?? 0));
      }
      const allowed = peek ? count < this.limit : count <= this.limit;
      return { allowed, remaining: Math.max(0, this.limit - count), resetSeconds };
    } catch (error) {
      this.logger.warn({ component: 'rate-limit', err: error }, 'rate limit not counted: the database did not answer');
      return { allowed: true, remaining: this.limit, resetSeconds };
    }
  }

  private async sweep(windowStart: number): Promise<void> {
    if (windowStart <= this.lastSweep) return;
    this.lastSweep = windowStart;
    await this.db.deleteFrom('rate_limit_windows').where('window_start', '<', windowStart - this.windowMs).execute();
  }
}

function clientIp(c: Parameters<MiddlewareHandler<AppEnv>>[0]): string {
  return clientAddressOf(c); // the socket's peer, or with TRUST_PROXY the caller its proxies name
}

/**
 * The `env` of a request the service makes to itself on behalf of a caller whose requests were
 * already counted (each JSON-RPC call of `/mcp` is counted there; the REST route it calls is not
 * counted again). A symbol: nothing from outside the process can carry it.
 */
export const ALREADY_COUNTED = Symbol('already counted');

function alreadyCounted(env: unknown): boolean {
  return typeof env === 'object' && env !== null && (env as Record<symbol, unknown>)[ALREADY_COUNTED] === true;
}

/**
 * Sets X-RateLimit-* on every API response and answers 429 with Retry-After over the limit.
 * `exempt` paths (the health probe) show the budget without spending it, so monitors are never throttled.
 * Each request counts one; a handler whose request carries several calls (an `/mcp` batch) counts
 * the rest with `c.get('countCalls')`, which answers 429 the same way when they do not fit.
 */
export function rateLimit(options: { limiter: RequestLimiter; exempt?: (path: string) => boolean }): MiddlewareHandler<AppEnv> {
  return async function rateLimit(c, next) {
    if (alreadyCounted(c.env)) {
      c.set('countCalls', async () => undefined);
      return next();
    }
    const auth = c.get('auth');
    const subject = auth ? `key:${auth.keyId}` : `ip:${clientIp(c)}`;
    const peek = options.exempt?.(c.req.path) ?? false;
    const headers: Record<string, string> = { 'X-RateLimit-Limit': String(options.limiter.limit) };
    const count = async (cost: number, calls = cost): Promise<void> => {
      const verdict = await options.limiter.take(subject, peek, cost);
      headers['X-RateLimit-Remaining'] = String(verdict.remaining);
      headers['X-RateLimit-Reset'] = String(verdict.resetSeconds);
      if (!verdict.allowed && !peek) {
        const carried = calls === 1 ? '' : ` (this request carries ${calls} calls)`;
        throw new ApiError(429, 'rate_limited', `Rate limit of ${options.limiter.limit} requests per minute exceeded${carried}`, {
          limit: options.limiter.limit,
          retry_after_seconds: verdict.resetSeconds,
        }, undefined, { ...headers, 'Retry-After': String(verdict.resetSeconds) });
      }
    };
    await count(1);
    c.set('countCalls', async (calls) => (calls > 1 ? count(calls - 1, calls) : undefined));
    try {
      await next();
    } finally {
      for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    }
  };
}
