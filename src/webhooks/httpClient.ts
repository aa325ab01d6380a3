import { performance } from 'node:perf_hooks';
import { Agent, buildConnector, request } from 'undici';
import { BlockedDestinationError, createGuardedConnector, systemLookup, type HostLookup } from './guardedConnector.js';

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
}

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** Sends webhook attempts. Shared by the dispatcher and the test route so both behave alike. */
export interface WebhookHttpClient {
  send(request: WebhookRequest): Promise<AttemptOutcome>;
  close(): Promise<void>;
}

export interface WebhookHttpClientOptions {
  timeoutMs: number;
  /** SPEC §4.7 guard: https only and public resolved addresses only. */
  guard: boolean;
  lookup?: HostLookup;
  /** Replaces the address policy of the guard (tests only: to reach a local TLS receiver through it). */
  addressPolicy?: (address: string) => string | undefined;
  /** Trusted CA certificates, replacing Node's defaults. */
  ca?: string | Buffer;
}

const MAX_READ_BYTES = 64 * 1024;
const MAX_STORED_BYTES = 2 * 1024;

function classify(error: unknown, timedOut: boolean): { errorClass: string; errorMessage: string } {
  const err = error as { code?: string; message?: string; name?: string };
  const message = err?.message ?? String(error);
  if (timedOut || err?.name === 'AbortError' || /Timeout/.test(err?.code ?? '')) return { errorClass: 'timeout', errorMessage: message };
  if (error instanceof BlockedDestinationError) return { errorClass: 'blocked_destination', errorMessage: message };
  const code = err?.code ?? '';
  if (code === 'ECONNREFUSED') return { errorClass: 'connection_refused', errorMessage: message };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { errorClass: 'dns_error', errorMessage: message };
  if (/TLS|CERT|SSL|SELF_SIGNED|ERR_SSL/.test(code) || /certificate|tls/i.test(message)) return { errorClass: 'tls_error', errorMessage: message };
  return { errorClass: 'connection_error', errorMessage: code ? `${code}: ${message}` : message };
}

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
  const agent = new Agent({
    connect,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 4_000,
  });

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

      const controller = new AbortController();
      let timedOut = false;
      // One deadline for connect, headers and body together, so a trickling receiver cannot hold a slot.
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, options.timeoutMs);
      try {
        const res = await request(url, { method: 'POST', headers: req.headers, body: req.body, dispatcher: agent, signal: controller.signal });
        const body = (await readBounded(res.body)).subarray(0, MAX_STORED_BYTES).toString('utf8');
        const status = res.statusCode;
        if (status >= 200 && status < 300) return { ok: true, statusCode: status, durationMs: elapsed(), responseBody: body, errorClass: null, errorMessage: null };
        if (status >= 300 && status < 400) {
          const location = res.headers.location;
          return fail('redirect', `redirect not followed${location ? ` (Location: ${String(location).slice(0, 200)})` : ''}`, status, body);
        }
        return fail('http_status', `receiver answered ${status}`, status, body);
      } catch (error) {
        const { errorClass, errorMessage } = classify(error, timedOut);
        return fail(errorClass, errorMessage);
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await agent.close();
    },
  };
}
