import type { AttemptOutcome } from './httpClient.js';

/**
 * What an attempt's outcome says about the endpoint's host (docs/delivery.md): only host-level failures
 * (connect, DNS, TLS, timeout, 5xx, 429) count against the breaker. Any other answer (a 4xx, a
 * redirect) shows the host is up and counts as a success for the breaker, while it still costs the
 * delivery its attempt. Failures that never reached the host (a refused destination, an undecryptable
 * secret) or that were this service's own (its event loop stalled) say nothing either way.
 */
export function breakerVerdict(outcome: AttemptOutcome): 'success' | 'failure' | 'neutral' {
  if (outcome.ok) return 'success';
  if (outcome.serviceFault) return 'neutral';
  const status = outcome.statusCode;
  if (status !== null) return status >= 500 || status === 429 ? 'failure' : 'success';
  return HOST_LEVEL_ERRORS.has(outcome.errorClass ?? '') ? 'failure' : 'neutral';
}

const HOST_LEVEL_ERRORS = new Set(['timeout', 'connection_refused', 'dns_error', 'tls_error', 'connection_error']);
