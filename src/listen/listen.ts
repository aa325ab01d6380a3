import { generateSecret, standardSecretKey } from '../../packages/webhooks/src/index.js';
import { forwardEvent, type ForwardOutcome } from './forward.js';
import { readSse } from './sse.js';
import { sleepUnlessAborted } from '../lib/sleep.js';

export interface ListenOptions {
  /** The service, e.g. http://127.0.0.1:8080. */
  serviceUrl: string;
  apiKey: string;
  /** The local receiver. */
  forwardTo: string;
  /** `?events=` of the stream (`launch.*`, comma-separated filters). */
  events?: string;
  /** The local signing secret; a new one when not given. */
  secret?: string;
  /** Printed instead of the secret itself (a kept secret is not shown again unless asked). */
  secretNote?: string;
  /** Resume after this event id (the last one a previous run forwarded); the stream's current end when absent. */
  startAfter?: string;
  /** Told each new place in the stream: an event forwarded, or where a new stream starts. */
  onPosition?(eventId: string | undefined): void;
  /** Stops listening. */
  signal: AbortSignal;
  /** One line of output (stdout). */
  print(line: string): void;
  /** Reconnect waits: first and longest (default 250 ms .. 5 s). */
  backoffMs?: { min: number; max: number };
  now?: () => number;
}

/** A refusal of the service's that a reconnect cannot fix (a bad key, a bad filter). */
export class ListenRefused extends Error {}

/**
 * `npm run listen`: streams the owner's events (`GET /api/events/stream`) and forwards each to a
 * local URL, signed with a local secret, printing one line per event: kind, id, local status. After
 * a dropped connection it reconnects with `Last-Event-ID`, so no event is lost or forwarded twice.
 * Resolves when `signal` aborts; rejects with {@link ListenRefused} when the service refuses.
 */
export async function listen(options: ListenOptions): Promise<void> {
  const secret = options.secret ?? generateSecret();
  if (!/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/.test(secret)) throw new ListenRefused('The local secret must be whsec_ followed by at least 24 bytes of base64 (both signature schemes key with it)');
  standardSecretKey(secret);
  const now = options.now ?? Date.now;
  const backoff = options.backoffMs ?? { min: 250, max: 5_000 };
  const { print, signal } = options;
  print(options.secretNote ?? `Your local webhook signing secret is ${secret} (X-Service-Signature and webhook-signature are both signed with it)`);
  let lastEventId = options.startAfter;
  const moveTo = (eventId: string | undefined) => {
    lastEventId = eventId;
    options.onPosition?.(eventId);
  };
  let wait = backoff.min;
  let announced = false;
  while (!signal.aborted) {
    const url = new URL('/api/events/stream', options.serviceUrl);
    if (options.events) url.searchParams.set('events', options.events);
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}`, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    try {
      const res = await fetch(url, { headers, signal });
      if (res.status !== 200 || !res.body) {
        const text = await res.text().catch(() => '');
        const message = errorMessage(text) ?? `HTTP ${res.status}`;
        if (res.status === 400 && lastEventId !== undefined && namesLastEventId(text)) {
          // The event it stopped after is gone (retention deleted it) or belongs to another owner: nothing to resume after.
          print(`The service no longer knows ${lastEventId}, the last event forwarded; starting at the stream's current end (events since then are not forwarded)`);
          moveTo(undefined);
          continue;
        }
        if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw new ListenRefused(`The service refused the stream (${res.status}): ${message}`);
        throw new Error(message);
      }
      const resumed = !announced && lastEventId !== undefined ? `, resuming after ${lastEventId}` : '';
      print(announced ? `Reconnected${lastEventId ? ` after ${lastEventId}` : ''}` : `Ready: forwarding ${options.events ?? 'all'} events from ${options.serviceUrl} to ${options.forwardTo}${resumed} (Ctrl-C to stop)`);
      announced = true;
      wait = backoff.min;
      for await (const message of readSse(res.body)) {
        if (message.kind === 'id') moveTo(message.id);
        if (message.kind !== 'event') continue;
        const envelope = parseEnvelope(message.data);
        const eventId = message.id ?? envelope.id;
        const outcome = await forwardEvent(options.forwardTo, { secret, body: message.data, event: envelope.event, eventId, nowMs: now(), timeoutMs: 10_000 });
        print(`${envelope.event} ${eventId} ${describe(outcome)}`);
        moveTo(eventId);
      }
      if (signal.aborted) return;
      print('The stream ended; reconnecting');
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ListenRefused) throw error;
      print(`Connection lost (${reasonOf(error)}); reconnecting in ${wait} ms`);
      await sleepUnlessAborted(wait, signal);
      wait = Math.min(backoff.max, wait * 2);
    }
  }
}

function describe(outcome: ForwardOutcome): string {
  return 'status' in outcome ? `→ ${outcome.status}` : `→ failed: ${outcome.error}`;
}

function parseEnvelope(data: string): { id: string; event: string } {
  try {
    const parsed = JSON.parse(data) as { id?: unknown; event?: unknown };
    return { id: String(parsed.id ?? ''), event: String(parsed.event ?? 'unknown') };
  } catch {
    return { id: '', event: 'unknown' };
  }
}

function errorMessage(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { error?: { message?: string } }).error?.message;
  } catch {
    return undefined;
  }
}

function namesLastEventId(text: string): boolean {
  try {
    const fields = (JSON.parse(text) as { error?: { details?: { fields?: Array<{ field?: string }> } } }).error?.details?.fields ?? [];
    return fields.some((f) => f.field === 'Last-Event-ID');
  } catch {
    return false;
  }
}

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error instanceof Error ? error.message : String(error));
}
