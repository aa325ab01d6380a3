import type { WebhookEndpointRow } from '../../db/schema.js';
import { displayUrl } from '../present.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** An endpoint as the API shows it; never its secrets (`secret` only on create and rotate). */
export function presentEndpoint(e: WebhookEndpointRow, now: number, secret?: string) {
  const rotating = e.previous_secret_enc !== null && e.previous_secret_expires_at !== null && e.previous_secret_expires_at > now;
  return {
    id: e.id,
    url: displayUrl(e.url),
    description: e.description,
    events: JSON.parse(e.events) as string[],
    signatureScheme: e.signature_scheme,
    disabled: e.disabled_at !== null,
    disabledAt: iso(e.disabled_at),
    disabledReason: e.disabled_reason,
    failingSince: iso(e.failing_since),
    rateLimitPerSecond: e.rate_limit_per_second === null ? null : Number(e.rate_limit_per_second),
    ordering: e.ordering,
    // While set, every attempt is signed with the current and the previous secret.
    previousSecretExpiresAt: rotating ? iso(e.previous_secret_expires_at) : null,
    createdAt: iso(e.created_at),
    updatedAt: iso(e.updated_at),
    ...(secret === undefined ? {} : { secret }),
  };
}
