import { timingSafeEqual } from 'node:crypto';
import { signPayload } from './signature.js';

/** Why {@link verifyWebhook} refused a delivery. Every reason should be answered with 401. */
export type VerificationFailure =
  | 'missing_header'
  | 'malformed_signature'
  | 'malformed_timestamp'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'malformed_body';

/** Thrown by {@link verifyWebhook}; `reason` says which check failed. */
export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: VerificationFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** Headers as a fetch `Headers` object or a Node `IncomingHttpHeaders`-like record. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Allowed clock difference either way, in seconds. Default 300 (SPEC §4.2). */
  toleranceSeconds?: number;
  /** The receiver's current time (ms since epoch or a Date). Default: now. */
  now?: number | Date;
}

export interface VerifiedWebhook<T = unknown> {
  /** The parsed envelope: `{id, event, timestamp, launchId, sequence, data}`. */
  payload: T;
  /** Unix seconds the attempt was signed at. */
  timestamp: number;
  event: string | undefined;
  eventId: string | undefined;
  attempt: number | undefined;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Verifies one delivery: the `X-Service-Signature` HMAC over `<X-Service-Timestamp>.<rawBody>`,
 * compared in constant time, and a timestamp within `toleranceSeconds` of `now` either way.
 * Pass the raw body bytes exactly as received (re-serialized JSON does not verify).
 * Returns the parsed envelope; throws {@link WebhookVerificationError} otherwise.
 */
export function verifyWebhook<T = unknown>(
  rawBody: string | Buffer,
  headers: HeaderSource,
  secret: string,
  options: VerifyOptions = {},
): VerifiedWebhook<T> {
  const tolerance = options.toleranceSeconds ?? 300;
  const nowMs = options.now === undefined ? Date.now() : options.now instanceof Date ? options.now.getTime() : options.now;
  const signature = header(headers, 'x-service-signature');
  const stamp = header(headers, 'x-service-timestamp');
  if (signature === undefined || stamp === undefined) {
    throw new WebhookVerificationError('missing_header', 'X-Service-Signature and X-Service-Timestamp are required');
  }
  const match = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim());
  if (!match?.[1]) throw new WebhookVerificationError('malformed_signature', 'X-Service-Signature must be sha256=<64 hex digits>');
  if (!/^\d{1,12}$/.test(stamp.trim())) throw new WebhookVerificationError('malformed_timestamp', 'X-Service-Timestamp must be unix seconds');
  const timestamp = Number(stamp.trim());
  if (Math.abs(nowMs / 1000 - timestamp) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `timestamp is more than ${tolerance} s away from now`);
  }
  const expected = Buffer.from(signPayload(secret, timestamp, rawBody), 'hex');
  const given = Buffer.from(match[1].toLowerCase(), 'hex');
  // Both are 32 bytes here; timingSafeEqual keeps the comparison independent of where they differ.
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    throw new WebhookVerificationError('signature_mismatch', 'signature does not match the body');
  }
  let payload: T;
  try {
    payload = JSON.parse(Buffer.isBuffer(rawBody) ? rawBody.toString('utf8') : rawBody) as T;
  } catch {
    throw new WebhookVerificationError('malformed_body', 'body is not JSON');
  }
  const attempt = header(headers, 'x-service-attempt');
  return {
    payload,
    timestamp,
    event: header(headers, 'x-service-event'),
    eventId: header(headers, 'x-service-event-id'),
    attempt: attempt === undefined ? undefined : Number(attempt),
  };
}
