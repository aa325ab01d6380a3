import { createHmac } from 'node:crypto';

/**
 * The label anonymous health callers see in production instead of a customer's webhook host
 * (`host-` + 12 hex of an HMAC keyed from SECRET_KEY): stable across requests and restarts, so a
 * monitor can follow one breaker, and reveals nothing about the name. Admin keys see names.
 */
export function createHostLabeler(secretKey: Buffer): (host: string) => string {
  const key = createHmac('sha256', secretKey).update('health-host-label/v1').digest();
  return (host) => `host-${createHmac('sha256', key).update(host).digest('hex').slice(0, 12)}`;
}
