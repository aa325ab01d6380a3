import { STATUS_CODES } from 'node:http';
import { Connection, type FetchFn } from '@solana/web3.js';
import type { BreakerSnapshot } from '../../lib/breaker.js';
import { parseRetryAfter } from '../../lib/retryAfter.js';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import { RpcHttpError } from '../errors.js';
import { createRpcBreaker, type RpcBreaker, type RpcBreakerOptions } from './breaker.js';

/** One RPC endpoint of SOLANA_RPC_URL: its own connection and its own breaker. */
export interface RpcEndpoint {
  /** The endpoint's host (`host:port`): how health names it (hashed for anonymous callers in production). */
  readonly host: string;
  readonly connection: Connection;
  readonly breaker: RpcBreaker;
}

/** Tuning of {@link createEndpointPool}. */
export interface EndpointPoolOptions {
  /** Per-request timeout (default 10 s). */
  requestTimeoutMs?: number;
  breaker?: RpcBreakerOptions;
  /**
   * Tries of a read across the endpoints before its failure surfaces (default 3). A read is
   * idempotent: a provider's passing 429, 5xx or lost answer is tried again here, on the next
   * healthy endpoint, instead of costing the launch step a wait.
   */
  readTries?: number;
  /** Pause before a read's next round over the endpoints (default 250 ms, doubling). */
  retryPauseMs?: number;
  /** Longest `Retry-After` a read waits out in place; a longer one surfaces, and the step waits instead (default 2 s). */
  maxInlineRetryAfterMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The endpoints of SOLANA_RPC_URL, primary first. Reads go to the first endpoint whose breaker is
 * not open and fail over to the next on a transient failure; sends go to every endpoint whose breaker
 * is not open at once. The pool counts as open (the chain unreachable) only when every breaker is.
 */
export interface EndpointPool {
  readonly endpoints: readonly RpcEndpoint[];
  /** Runs an idempotent call with failover and a few quick retries. */
  read<T>(fn: (connection: Connection) => Promise<T>): Promise<T>;
  /** Runs a call that must not be repeated (an airdrop) once, on the first endpoint not open. */
  once<T>(fn: (connection: Connection) => Promise<T>): Promise<T>;
  /** Runs a call on every endpoint not open, in parallel: the first success, else the most telling failure. */
  broadcast<T>(fn: (connection: Connection) => Promise<T>): Promise<T>;
  /** The pool as one breaker: `open` only when every endpoint's breaker is open. */
  state(): BreakerSnapshot;
  shutdown(): void;
}

/** Splits SOLANA_RPC_URL into its endpoints (comma-separated, primary first). */
export function parseRpcUrls(value: string): string[] {
  return value
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
}

/** Builds the pool over `urls` (primary first). */
export function createEndpointPool(urls: readonly string[], options: EndpointPoolOptions = {}): EndpointPool {
  if (urls.length === 0) throw new Error('no RPC endpoint');
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  const tries = options.readTries ?? 3;
  const pauseMs = options.retryPauseMs ?? 250;
  const inlineRetryAfter = options.maxInlineRetryAfterMs ?? 2000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const endpoints: RpcEndpoint[] = urls.map((url) => ({
    host: new URL(url).host,
    connection: new Connection(url, { commitment: 'confirmed', disableRetryOnRateLimit: true, fetch: timedFetch(timeoutMs) }),
    breaker: createRpcBreaker(options.breaker),
  }));
  const usable = () => {
    const closed = endpoints.filter((e) => e.breaker.state().state !== 'open');
    return closed.length > 0 ? closed : undefined;
  };

  return {
    endpoints,
    async read(fn) {
      let last: unknown;
      for (let attempt = 0; attempt < tries; attempt++) {
        // Primary first; each try of a round moves on to the next endpoint that is not open.
        const candidates = usable();
        if (!candidates) return endpoints[0]!.breaker.call(() => fn(endpoints[0]!.connection)); // every breaker open: fails fast, classified
        const endpoint = candidates[attempt % candidates.length]!;
        try {
          return await endpoint.breaker.call(() => fn(endpoint.connection));
        } catch (error) {
          last = error;
          if (!(error instanceof TransientError) || error.code === 'blockhash_expired' || attempt === tries - 1) throw error;
          const retryAfter = error.retryAfterMs ?? 0;
          if (retryAfter > inlineRetryAfter && candidates.length === 1) throw error;
          // Another endpoint is tried at once; the same one again after a pause (and its Retry-After).
          if (candidates.length === 1 || (attempt + 1) % candidates.length === 0) await sleep(Math.max(pauseMs * 2 ** attempt, Math.min(retryAfter, inlineRetryAfter)));
        }
      }
      throw last;
    },
    once(fn) {
      const endpoint = usable()?.[0] ?? endpoints[0]!;
      return endpoint.breaker.call(() => fn(endpoint.connection));
    },
    async broadcast(fn) {
      const targets = usable();
      if (!targets) return endpoints[0]!.breaker.call(() => fn(endpoints[0]!.connection));
      const outcomes = await Promise.allSettled(targets.map((e) => e.breaker.call(() => fn(e.connection))));
      const ok = outcomes.find((o): o is PromiseFulfilledResult<Awaited<ReturnType<typeof fn>>> => o.status === 'fulfilled');
      if (ok) return ok.value;
      const errors = outcomes.map((o) => (o as PromiseRejectedResult).reason as unknown);
      // A verdict on the transaction itself (a program error from preflight) says more than a transport failure.
      throw errors.find((e) => e instanceof NonRetriableError) ?? errors.find((e) => e instanceof TransientError && e.code === 'blockhash_expired') ?? errors[0];
    },
    state() {
      const states = endpoints.map((e) => e.breaker.state());
      const open = states.every((s) => s.state === 'open');
      const halfOpen = !open && states.every((s) => s.state !== 'closed');
      return { state: open ? 'open' : halfOpen ? 'half-open' : 'closed', failures: Math.min(...states.map((s) => s.failures)) };
    },
    shutdown() {
      for (const e of endpoints) e.breaker.shutdown();
    },
  };
}

/**
 * web3.js's fetch with a per-request timeout. A 429 or 503 naming a `Retry-After` becomes an
 * {@link RpcHttpError}: web3.js would word it without its headers.
 */
function timedFetch(timeoutMs: number): FetchFn {
  return (async (input: string, init?: RequestInit) => {
    const res = await fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const retryAfterMs = res.status === 429 || res.status === 503 ? parseRetryAfter(res.headers.get('retry-after') ?? undefined, Date.now()) : undefined;
    if (retryAfterMs === undefined) return res;
    await res.body?.cancel();
    throw new RpcHttpError(res.status, res.statusText || (STATUS_CODES[res.status] ?? ''), retryAfterMs);
  }) as unknown as FetchFn;
}
