import { signatureHeaders, type SignatureScheme } from '../../packages/webhooks/src/index.js';

/** The User-Agent every delivery carries, so receivers can recognise us in their logs. */
export const WEBHOOK_USER_AGENT = 'LaunchService-Webhooks/1.0 (+https://docs.launch-service.dev/webhooks)';

export interface DeliveryHeadersInput {
  /** Every valid secret, newest first (two during a rotation's overlap). */
  secrets: readonly string[];
  /** Default `service` (docs/delivery.md); `standard` per Standard Webhooks (docs/webhooks.md). */
  scheme?: SignatureScheme;
  body: string;
  event: string;
  eventId: string;
  attempt: number;
  requestId: string;
  /** Unix seconds of this attempt: every attempt is signed afresh with the current time. */
  timestampSeconds: number;
}

/**
 * The exact header set of one delivery attempt (docs/delivery.md). The signature headers come from the
 * receiver package (`packages/webhooks`), so signing and verifying share one implementation.
 */
export function buildDeliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...signatureHeaders({ scheme: input.scheme ?? 'service', secrets: input.secrets, messageId: input.eventId, timestampSeconds: input.timestampSeconds, body: input.body }),
    'x-service-event': input.event,
    'x-service-event-id': input.eventId,
    'x-service-attempt': String(input.attempt),
    'x-request-id': input.requestId,
    'user-agent': WEBHOOK_USER_AGENT,
  };
}
