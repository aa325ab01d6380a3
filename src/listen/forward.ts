import { signatureHeaders } from '../../packages/webhooks/src/index.js';
import { buildDeliveryHeaders } from '../webhooks/signature.js';

/** What the local receiver answered: its status, or why there was no answer. */
export type ForwardOutcome = { status: number } | { error: string };

/**
 * The headers of one forwarded event: the dispatcher's own delivery headers (`service` scheme:
 * `X-Service-Signature`) plus the Standard Webhooks ones (`webhook-signature`), both signed with the
 * local secret, so a receiver written for either scheme verifies it unchanged.
 */
export function forwardHeaders(input: { secret: string; body: string; event: string; eventId: string; timestampSeconds: number }): Record<string, string> {
  return {
    ...buildDeliveryHeaders({ secrets: [input.secret], scheme: 'service', body: input.body, event: input.event, eventId: input.eventId, attempt: 1, requestId: `listen_${input.eventId}`, timestampSeconds: input.timestampSeconds }),
    ...signatureHeaders({ scheme: 'standard', secrets: [input.secret], messageId: input.eventId, timestampSeconds: input.timestampSeconds, body: input.body }),
  };
}

/** POSTs one event's envelope to the local URL, signed; never throws. */
export async function forwardEvent(url: string, input: { secret: string; body: string; event: string; eventId: string; nowMs: number; timeoutMs: number }): Promise<ForwardOutcome> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: forwardHeaders({ ...input, timestampSeconds: Math.floor(input.nowMs / 1000) }),
      body: input.body,
      signal: AbortSignal.timeout(input.timeoutMs),
    });
    await res.arrayBuffer().catch(() => undefined);
    return { status: res.status };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { error: cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error)) };
  }
}
