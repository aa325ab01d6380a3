import { timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors.js';
import { signServicePayload, signStandardPayload, type RawBody, type SignatureScheme } from './sign.js';

/** Headers as a fetch `Headers` object or a Node `IncomingHttpHeaders`-like record. */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Allowed clock difference either way, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** The receiver's current time (ms since epoch or a Date). Default: now. */
  now?: number | Date;
}

export interface VerifiedWebhook<T = unknown> {
  /** The parsed envelope: `{id, event, timestamp, launchId, sequence, data}`. */
  payload: T;
  /** Which scheme the delivery was signed with (told by its headers). */
  scheme: SignatureScheme;
  /** Unix seconds the attempt was signed at. */
  timestamp: number;
  /** The event kind (`X-Service-Event`, else the envelope's `event`). */
  event: string | undefined;
  /** The event id (`X-Service-Event-Id` or `webhook-id`); stable across retries, dedupe on it. */
  eventId: string | undefined;
  /** Which attempt this is (`X-Service-Attempt`), 1-based. */
  attempt: number | undefined;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function toBytes(body: RawBody): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** Constant-time: whether any given signature equals any expected one. */
function anyMatches(given: Buffer[], expected: Buffer[]): boolean {
  let found = false;
  for (const e of expected) {
    for (const g of given) {
      // Lengths are public (fixed by the hash); the bytes are compared without early exit.
      if (g.length === e.length && timingSafeEqual(g, e)) found = true;
    }
  }
  return found;
}

function checkTimestamp(stamp: string, nowMs: number, tolerance: number): number {
  if (!/^\d{1,12}$/.test(stamp.trim())) throw new WebhookVerificationError('malformed_timestamp', 'the timestamp header must be unix seconds');
  const timestamp = Number(stamp.trim());
  const age = nowMs / 1000 - timestamp;
  if (age > tolerance) throw new WebhookVerificationError('timestamp_too_old', `the attempt was signed more than ${tolerance} s ago`);
  if (age < -tolerance) throw new WebhookVerificationError('timestamp_too_new', `the attempt is signed more than ${tolerance} s in the future`);
  return timestamp;
}

/**
 * Verifies one delivery and returns its parsed envelope; throws {@link WebhookVerificationError}
 * otherwise. The scheme follows the headers: `webhook-signature` (Standard Webhooks) or
 * `X-Service-Signature`. Both may carry several space-separated signatures (during a secret
 * rotation); a match of any of them with any of `secret` is accepted. Comparisons are constant-time
 * and the timestamp must be within `toleranceSeconds` of `now` either way.
 *
 * Pass the raw body exactly as received: re-serialized JSON does not verify.
 */
export function verifyWebhook<T = unknown>(
  rawBody: RawBody,
  headers: HeaderSource,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): VerifiedWebhook<T> {
  const secrets = (typeof secret === 'string' ? [secret] : [...secret]).filter((s) => typeof s === 'string' && s.length > 0);
  if (secrets.length === 0) throw new WebhookVerificationError('invalid_secret', 'no secret to verify with');
  const tolerance = options.toleranceSeconds ?? 300;
  const nowMs = options.now === undefined ? Date.now() : options.now instanceof Date ? options.now.getTime() : options.now;
  const body = toBytes(rawBody);

  const standardSignature = header(headers, 'webhook-signature');
  const scheme: SignatureScheme = standardSignature !== undefined ? 'standard' : 'service';
  let timestamp: number;
  let eventId = header(headers, 'x-service-event-id');
  if (scheme === 'standard') {
    const id = header(headers, 'webhook-id');
    const stamp = header(headers, 'webhook-timestamp');
    if (id === undefined || stamp === undefined || standardSignature === undefined) {
      throw new WebhookVerificationError('missing_header', 'webhook-id, webhook-timestamp and webhook-signature are required');
    }
    const given = standardSignature
      .split(' ')
      .map((part) => /^v1,([A-Za-z0-9+/]+={0,2})$/.exec(part.trim())?.[1])
      .filter((s): s is string => s !== undefined)
      .map((s) => Buffer.from(s, 'base64'));
    if (given.length === 0) throw new WebhookVerificationError('malformed_signature', 'webhook-signature must hold v1,<base64> signatures');
    timestamp = checkTimestamp(stamp, nowMs, tolerance);
    const expected = secrets.map((s) => Buffer.from(signStandardPayload(s, id, timestamp, body), 'base64'));
    if (!anyMatches(given, expected)) throw new WebhookVerificationError('signature_mismatch', 'no signature matches the body and secret');
    eventId = id;
  } else {
    const signature = header(headers, 'x-service-signature');
    const stamp = header(headers, 'x-service-timestamp');
    if (signature === undefined || stamp === undefined) {
      throw new WebhookVerificationError('missing_header', 'X-Service-Signature and X-Service-Timestamp are required');
    }
    const given = signature
      .split(' ')
      .map((part) => /^sha256=([0-9a-f]{64})$/i.exec(part.trim())?.[1])
      .filter((s): s is string => s !== undefined)
      .map((s) => Buffer.from(s.toLowerCase(), 'hex'));
    if (given.length === 0) throw new WebhookVerificationError('malformed_signature', 'X-Service-Signature must hold sha256=<64 hex digits> signatures');
    timestamp = checkTimestamp(stamp, nowMs, tolerance);
    const expected = secrets.map((s) => Buffer.from(signServicePayload(s, timestamp, body), 'hex'));
    if (!anyMatches(given, expected)) throw new WebhookVerificationError('signature_mismatch', 'no signature matches the body and secret');
  }

  let payload: T;
  try {
    payload = JSON.parse(body.toString('utf8')) as T;
  } catch {
    throw new WebhookVerificationError('malformed_body', 'the body is not JSON');
  }
  const attempt = header(headers, 'x-service-attempt');
  const envelopeEvent = typeof payload === 'object' && payload !== null ? (payload as { event?: unknown }).event : undefined;
  return {
    payload,
    scheme,
    timestamp,
    event: header(headers, 'x-service-event') ?? (typeof envelopeEvent === 'string' ? envelopeEvent : undefined),
    eventId,
    attempt: attempt === undefined || !/^\d+$/.test(attempt) ? undefined : Number(attempt),
  };
}
