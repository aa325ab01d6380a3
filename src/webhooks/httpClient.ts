import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import type { LoopLag } from '../lib/loopLag.js';
import { honoursRetryAfter, parseRetryAfter } from './retryAfter.js';
import { createGuardedConnector, systemLookup, type HostLookup } from './guardedConnector.js';
import { classify, staleSocketError, type Expired } from './attemptFailure.js';
import { notifyOnWrite, type WriteHook } from './writeHook.js';

/** The outcome of one HTTP attempt. `ok` only for a 2xx answer. */
export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  /** The first 2 KB of the response body, for the attempt log. */
  responseBody: string | null;
  /** Failure class: http_status, redirect, timeout, connection_refused, dns_error, tls_error, blocked_destination, insecure_scheme, connection_error. */
  errorClass: string | null;
  errorMessage: string | null;
  /**
   * The failure is this service's own (`service_lagging`: its event loop stalled while the attempt
   * was in flight, even after one immediate retry on a fresh connection): not held against the receiver's breaker.
   */
  serviceFault?: boolean;
  /** Detail for the server log only, never stored or answered (e.g. what a blocked name resolved to). */
  logDetail?: string;
  /** A 429 or 503 answer's Retry-After, in ms from the answer: the next attempt waits at least this long (see retryAfter.ts). */
  retryAfterMs?: number;
}

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /**
   * Whether the request may still go out again at once — the retry on a fresh connection after a
   * pooled socket the receiver had closed, or after our own stalled loop — asked when that retry is
   * due. The dispatcher answers from its lease: a process stalled past the lease (stopped, swapped
   * out) must not send a delivery again that another instance has taken over, and likely
   * delivered, since; it renews its lease first. Default: yes.
   */
  mayResend?(): boolean | Promise<boolean>;
}

/** Sends webhook attempts. Shared by the dispatcher and the test route so both behave alike. */
export interface WebhookHttpClient {
  send(request: WebhookRequest): Promise<AttemptOutcome>;
  close(): Promise<void>;
}

export interface WebhookHttpClientOptions {
  timeoutMs: number;
  /** docs/delivery.md guard: https only and public resolved addresses only. */
  guard: boolean;
  lookup?: HostLookup;
  /** Replaces the address policy of the guard (tests only: to reach a local TLS receiver through it). */
  addressPolicy?: (address: string) => string | undefined;
  /** Trusted CA certificates, replacing Node's defaults. */
  ca?: string | Buffer;
  /**
   * This process's event-loop delay. A failure during which the loop stalled at least
   * `lagToleranceMs` (default: a quarter of the timeout, at least 1 s, so a busy shared machine's
   * scheduling hiccups do not count) is ours, not the receiver's.
   */
  loopLag?: LoopLag;
  lagToleranceMs?: number;
  /**
   * Whether a refused destination's address and resolved name go into the attempt's error
   * (stored, shown to the customer). Off in production: the error says only "destination not
   * allowed", the detail goes to the server log through `logDetail`.
   */
  revealBlockedDetails?: boolean;
}

const MAX_READ_BYTES = 64 * 1024;
/** A deadline timer this late (ms) ran after a stall of this process's event loop: the stall is given back (see exchange). */
const STALL_GRACE_MS = 50;
const MAX_STORED_BYTES = 2 * 1024;

/** Reads at most 64 KB of the body, then drops the rest: a receiver cannot make us buffer more. */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const room = MAX_READ_BYTES - total;
    chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    total += Math.min(chunk.length, room);
    if (total >= MAX_READ_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks);
}

/** The undici-based client: attempt timeout, no redirects followed, bounded reads, SSRF guard at connect time. */
export function createWebhookHttpClient(options: WebhookHttpClientOptions): WebhookHttpClient {
  const connect = options.guard
    ? createGuardedConnector({ lookup: options.lookup ?? systemLookup, connectTimeoutMs: options.timeoutMs, policy: options.addressPolicy, ca: options.ca })
    : buildConnector({ timeout: options.timeoutMs, ...(options.ca === undefined ? {} : { ca: options.ca }) });
  const agentOptions = { connect, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs };
  const agent = new Agent({ ...agentOptions, keepAliveTimeout: 4_000 }).compose(notifyOnWrite);
  const lagToleranceMs = options.lagToleranceMs ?? Math.max(1_000, options.timeoutMs / 4);

  type Raw = { ok: true; statusCode: number; body: string; location: string | undefined; retryAfter: string | string[] | undefined } | { ok: false; error: unknown; expired: Expired; reusedSocket: boolean };

  /**
   * One HTTP exchange. The receiver's deadline (connect, headers and body together, so a
   * trickling receiver cannot hold a slot) starts when the request is written to the socket; until
   * then a backstop of twice the timeout bounds connecting and queueing.
   */
  async function exchange(url: URL, req: WebhookRequest, dispatcher: Dispatcher): Promise<Raw> {
    // undici takes an EventEmitter as the abort signal too; an AbortController per attempt cost
    // ~13 us more per request and kept each request's objects alive across a scavenge more often
    // (20 000 POSTs to a local receiver: 2 361 vs 2 070-2 132 ms, 45-53 vs 31-41 MB promoted).
    const signal: EventEmitter & { aborted?: boolean; reason?: unknown } = new EventEmitter();
    let written = false;
    let expired: Expired;
    let timer: NodeJS.Timeout | undefined;
    /** When the deadline timer is due, and how much of our own stall it has given back so far. */
    let dueAt = 0;
    let givenBack = 0;
    const arm = (ms: number) => {
      clearTimeout(timer);
      dueAt = performance.now() + ms;
      timer = setTimeout(check, ms);
    };
    // A deadline counts the receiver's time, not our stalls: a timer that runs late because this
    // process's event loop was blocked (timers run before the I/O that arrived meanwhile, so an
    // answer already in the socket would lose to it) gives the stall back, up to three timeouts in
    // all, and the answer that arrived during the stall is read first.
    const check = () => {
      const late = performance.now() - dueAt;
      if (late >= STALL_GRACE_MS && givenBack < 3 * options.timeoutMs) {
        const back = Math.min(late, options.timeoutMs, 3 * options.timeoutMs - givenBack);
        givenBack += back;
        arm(back);
        return;
      }
      expire();
    };
    const expire = () => {
      expired = written ? 'answer' : 'send';
      signal.aborted = true;
      signal.reason = new DOMException('This operation was aborted', 'AbortError');
      signal.emit('abort');
    };
    arm(2 * options.timeoutMs);
    const hook: WriteHook = {
      onWrite() {
        written = true;
        arm(options.timeoutMs);
      },
    };
    try {
      const res = await request(url, { method: 'POST', headers: req.headers, body: req.body, dispatcher, signal, opaque: hook });
      const body = (await readBounded(res.body)).subarray(0, MAX_STORED_BYTES).toString('utf8');
      const location = res.headers.location;
      return { ok: true, statusCode: res.statusCode, body, location: location === undefined ? undefined : String(location), retryAfter: res.headers['retry-after'] };
    } catch (error) {
      return { ok: false, error, expired, reusedSocket: hook.reusedSocket === true };
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    async send(req) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const fail = (errorClass: string, errorMessage: string, statusCode: number | null = null, responseBody: string | null = null) => ({
        ok: false,
        statusCode,
        durationMs: elapsed(),
        responseBody,
        errorClass,
        errorMessage,
      });
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        return fail('invalid_url', 'webhook URL is not a valid URL');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') return fail('invalid_url', `scheme ${url.protocol} is not supported`);
      if (options.guard && url.protocol !== 'https:') return fail('insecure_scheme', 'webhook URL must use https');

      let raw = await exchange(url, req, agent);
      const lagged = () => (options.loopLag ? options.loopLag.maxSince(started) : 0);
      if (!raw.ok && ((raw.reusedSocket && staleSocketError(raw.error)) || lagged() >= lagToleranceMs) && (await (req.mayResend?.() ?? true))) {
        // A pooled socket the receiver had closed, or our own stalled loop: not the receiver's
        // fault, so try again at once on a connection of its own.
        const fresh = new Agent({ ...agentOptions, pipelining: 0 }).compose(notifyOnWrite);
        try {
          raw = await exchange(url, req, fresh);
        } finally {
          void fresh.close().catch(() => undefined);
        }
      }
      if (raw.ok) {
        const { statusCode: status, body } = raw;
        if (status >= 200 && status < 300) return { ok: true, statusCode: status, durationMs: elapsed(), responseBody: body, errorClass: null, errorMessage: null };
        if (status >= 300 && status < 400) {
          return fail('redirect', `redirect not followed${raw.location ? ` (Location: ${raw.location.slice(0, 200)})` : ''}`, status, body);
        }
        const retryAfterMs = honoursRetryAfter(status) ? parseRetryAfter(raw.retryAfter, Date.now()) : undefined;
        const failed = fail('http_status', `receiver answered ${status}`, status, body);
        return retryAfterMs === undefined ? failed : { ...failed, retryAfterMs };
      }
      const revealBlocked = options.revealBlockedDetails ?? true;
      const lag = lagged();
      if (lag >= lagToleranceMs) {
        const { errorMessage } = classify(raw.error, raw.expired, options.timeoutMs, revealBlocked);
        return { ...fail('service_lagging', `the service's event loop stalled ${Math.round(lag)} ms during the attempt: ${errorMessage}`), serviceFault: true };
      }
      const { errorClass, errorMessage, logDetail } = classify(raw.error, raw.expired, options.timeoutMs, revealBlocked);
      return logDetail === undefined ? fail(errorClass, errorMessage) : { ...fail(errorClass, errorMessage), logDetail };
    },
    async close() {
      await agent.close();
    },
  };
}
