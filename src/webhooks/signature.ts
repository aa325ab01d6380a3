import { createHmac } from 'node:crypto';

/** The User-Agent every delivery carries, so receivers can recognise us in their logs. */
export const WEBHOOK_USER_AGENT = 'LaunchService-Webhooks/1.0 (+https://docs.launch-service.dev/webhooks)';

/**
 * HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the launch's webhook secret, hex encoded
 * (SPEC §4.2). The header value is `sha256=` followed by this digest.
 */
export function signPayload(secret: string, timestampSeconds: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex');
}

export interface DeliveryHeadersInput {
  secret: string;
  body: string;
  event: string;
  eventId: string;
  attempt: number;
  requestId: string;
  /** Unix seconds of this attempt: every attempt is signed afresh with the current time. */
  timestampSeconds: number;
}

/** The exact header set of one delivery attempt (SPEC §4.2). */
export function buildDeliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-service-signature': `sha256=${signPayload(input.secret, input.timestampSeconds, input.body)}`,
    'x-service-timestamp': String(input.timestampSeconds),
    'x-service-event': input.event,
    'x-service-event-id': input.eventId,
    'x-service-attempt': String(input.attempt),
    'x-request-id': input.requestId,
    'user-agent': WEBHOOK_USER_AGENT,
  };
}
