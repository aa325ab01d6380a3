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

/**
 * Methods that may take long on a healthy endpoint: sending (with its preflight simulation), a
 * simulation, an airdrop, history pages and scans. Every other method is a short read.
 */
const SLOW_METHODS = new Set(['sendTransaction', 'simulateTransaction', 'requestAirdrop', 'getSignaturesForAddress', 'getTransaction', 'getProgramAccounts', 'getBlock']);

/** How long a 429 without a Retry-After keeps an endpoint cooling. */
const DEFAULT_RATE_LIMIT_MS = 1000;

/** Tuning of {@link createEndpointPool}. */
export interface EndpointPoolOptions {
  /** Timeout of a slow method (sending, simulating, history; default 10 s). */
  requestTimeoutMs?: number;
  /** Timeout of every other method, a short read (default 2 s): a lost answer is given up quickly and the read tried again. */
  readTimeoutMs?: number;
  /**
   * A short read unanswered this long is sent once more beside the first (default 500 ms; 0 turns
   * it off); the first good answer wins and the other request is cut. A read is idempotent, so a
   * lost or slow answer costs this delay instead of the read timeout.
   */
  readHedgeMs?: number;
  breaker?: RpcBreakerOptions;
  /**
   * Tries of a read across the endpoints before its failure surfaces (default 3). A read is
   * idempotent: a provider's passing 429, 5xx or lost answer is tried again here, on the next
   * healthy endpoint, instead of costing the launch step a wait.
   */
  readTries?: number;
  /** Pause before a read's next round over the endpoints (default 250 ms, doubling). */
  retryPauseMs?: number;
  /** Longest `Retry-After` a call waits out in place; a longer one surfaces, and the step waits instead (default 2 s). */
  maxInlineRetryAfterMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * The endpoints of SOLANA_RPC_URL, primary first. Reads go to the first endpoint whose breaker is
 * not open and fail over to the next on a transient failure; sends go to every endpoint whose breaker
 * is not open at once. The pool counts as open (the chain unreachable) only when every breaker is.
 * A 429 is rate limiting, not a fault: it leaves the breaker alone and makes the request it
 * answered wait out its Retry-After ({@link timedFetch}).
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
  const timeouts = { slow: options.requestTimeoutMs ?? 10_000, read: options.readTimeoutMs ?? 2000 };
  const hedgeMs = options.readHedgeMs ?? 500;
  const tries = options.readTries ?? 3;
  const pauseMs = options.retryPauseMs ?? 250;
  const inlineRetryAfter = options.maxInlineRetryAfterMs ?? 2000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const endpoints: RpcEndpoint[] = urls.map((url) => ({
    host: new URL(url).host,
    connection: new Connection(url, { commitment: 'confirmed', disableRetryOnRateLimit: true, fetch: timedFetch({ timeouts, hedgeMs, inlineRetryAfter, now, sleep }) }),
    breaker: createRpcBreaker(options.breaker),
  }));
  const usable = () => {
    const closed = endpoints.filter((e) => e.breaker.state().state !== 'open');
    return closed.length > 0 ? closed : undefined;
  };
  const call = <T>(endpoint: RpcEndpoint, fn: (connection: Connection) => Promise<T>): Promise<T> => endpoint.breaker.call(() => fn(endpoint.connection));

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
          return await call(endpoint, fn);
        } catch (error) {
          last = error;
          if (!(error instanceof TransientError) || error.code === 'blockhash_expired' || attempt === tries - 1) throw error;
          if ((error.retryAfterMs ?? 0) > inlineRetryAfter && candidates.length === 1) throw error;
          // Another endpoint is tried at once, and so is the same one after a lost answer (its timeout
          // was the wait) or a 429 (its request waited out its Retry-After); after any other fault, a pause.
          const waited = error.code === 'rpc_timeout' || error.code === 'rpc_rate_limited';
          if (!waited && (candidates.length === 1 || (attempt + 1) % candidates.length === 0)) await sleep(pauseMs * 2 ** attempt);
        }
      }
      throw last;
    },
    once(fn) {
      const endpoint = usable()?.[0];
      return endpoint ? call(endpoint, fn) : endpoints[0]!.breaker.call(() => fn(endpoints[0]!.connection));
    },
    async broadcast(fn) {
      const targets = usable();
      if (!targets) return endpoints[0]!.breaker.call(() => fn(endpoints[0]!.connection));
      const outcomes = await Promise.allSettled(targets.map((e) => call(e, fn)));
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
 * web3.js's fetch for one endpoint, with a timeout by JSON-RPC method (short for reads, long for
 * the {@link SLOW_METHODS}). A 429 holds only the request it answered: that request waits out its
 * `Retry-After` (1 s without one) and goes once more, while the endpoint's other requests, of the
 * same method too, go on at once (a provider that limits them answers them 429 in turn). One whose
 * `Retry-After` is over `inlineRetryAfter`, or a second 429, fails as rate limited, so the caller
 * fails over or the step waits instead. A short read unanswered after `hedgeMs` is hedged
 * ({@link hedgedFetch}). A 429 or 503 naming a `Retry-After` becomes an {@link RpcHttpError}:
 * web3.js would word it without its headers.
 */
function timedFetch(options: { timeouts: { slow: number; read: number }; hedgeMs: number; inlineRetryAfter: number; now: () => number; sleep: (ms: number) => Promise<void> }): FetchFn {
  return (async (input: string, init?: RequestInit) => {
    const method = methodOf(init?.body);
    const slow = SLOW_METHODS.has(method);
    const timeoutMs = slow ? options.timeouts.slow : options.timeouts.read;
    const hedge = !slow && options.hedgeMs > 0 && options.hedgeMs < timeoutMs;
    for (let attempt = 1; ; attempt++) {
      const res = hedge ? await hedgedFetch(input, init, timeoutMs, options.hedgeMs) : await fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
      const limited = res.status === 429;
      const retryAfterMs = limited || res.status === 503 ? parseRetryAfter(res.headers.get('retry-after') ?? undefined, Date.now()) : undefined;
      if (!limited && retryAfterMs === undefined) return res;
      const waitMs = retryAfterMs ?? DEFAULT_RATE_LIMIT_MS;
      if (limited && attempt === 1 && waitMs <= options.inlineRetryAfter) {
        await res.body?.cancel();
        await options.sleep(waitMs);
        continue;
      }
      if (retryAfterMs === undefined) return res;
      await res.body?.cancel();
      throw new RpcHttpError(res.status, res.statusText || (STATUS_CODES[res.status] ?? ''), retryAfterMs);
    }
  }) as unknown as FetchFn;
}

/**
 * A hedged read: the request, and after `hedgeMs` without an answer the same request again; the first 2xx answer wins and the other
 * request is aborted. An answer that is not 2xx waits for the other request, and is returned when
 * that one fails too; both share the read timeout from the first send.
 */
function hedgedFetch(input: string, init: RequestInit | undefined, timeoutMs: number, hedgeMs: number): Promise<Response> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const controllers: AbortController[] = [];
  return new Promise<Response>((resolve, reject) => {
    let out = 0;
    let done = false;
    let held: { res: Response; controller: AbortController } | undefined;
    let failure: unknown;
    const finish = (winner: AbortController | undefined, settle: () => void) => {
      done = true;
      clearTimeout(timer);
      for (const c of controllers) if (c !== winner) c.abort();
      settle();
    };
    const settled = () => {
      if (done || out > 0) return;
      // The held answer's own request is not aborted: its body is still to be read.
      if (held) finish(held.controller, () => resolve(held!.res));
      else finish(undefined, () => reject(failure));
    };
    const send = () => {
      const controller = new AbortController();
      controllers.push(controller);
      out += 1;
      fetch(input, { ...init, signal: AbortSignal.any([deadline, controller.signal]) }).then(
        (res) => {
          out -= 1;
          if (done) return void res.body?.cancel().catch(() => undefined);
          if (res.ok) {
            void held?.res.body?.cancel().catch(() => undefined);
            return finish(controller, () => resolve(res));
          }
          if (held) void res.body?.cancel().catch(() => undefined);
          else held = { res, controller };
          settled();
        },
        (error: unknown) => {
          out -= 1;
          failure ??= error;
          settled();
        },
      );
    };
    const timer = setTimeout(() => {
      if (!done) send();
    }, hedgeMs);
    send();
  });
}

/** The JSON-RPC method of a request body (web3.js sends one call per request, or a batch of one kind). */
function methodOf(body: unknown): string {
  if (typeof body !== 'string') return '';
  const match = /"method"\s*:\s*"([A-Za-z]+)"/.exec(body);
  return match?.[1] ?? '';
}
