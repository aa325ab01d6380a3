import { createHmac, randomBytes } from 'node:crypto';
import { WebhookVerificationError } from './errors.js';

/**
 * `service`: `X-Service-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` keyed with the
 * secret string as given. `standard`: Standard Webhooks (`webhook-signature: v1,<base64 HMAC-SHA256
 * of "<id>.<timestamp>.<body>">`, keyed with the base64 bytes after `whsec_`).
 */
export type SignatureScheme = 'service' | 'standard';

/** Raw body as received: a string or the exact bytes. */
export type RawBody = string | Uint8Array;

export const SECRET_PREFIX = 'whsec_';

/** A new secret: `whsec_` + base64 of `bytes` random bytes (default 24, the minimum we issue). */
export function generateSecret(bytes = 24): string {
  return SECRET_PREFIX + randomBytes(Math.max(24, bytes)).toString('base64');
}

/** Hex HMAC-SHA256 of `<timestamp>.<body>` (the `service` scheme), keyed with the secret string. */
export function signServicePayload(secret: string, timestampSeconds: number, body: RawBody): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex');
}

/** The HMAC key of a Standard Webhooks secret: the base64 after an optional `whsec_` prefix. */
export function standardSecretKey(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    throw new WebhookVerificationError('invalid_secret', 'a Standard Webhooks secret is whsec_ followed by base64');
  }
  return Buffer.from(encoded, 'base64');
}

/** Base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` (the Standard Webhooks scheme). */
export function signStandardPayload(secret: string, messageId: string, timestampSeconds: number, body: RawBody): string {
  return createHmac('sha256', standardSecretKey(secret)).update(`${messageId}.${timestampSeconds}.`).update(body).digest('base64');
}

export interface SignatureHeadersInput {
  scheme: SignatureScheme;
  /** Every secret currently valid, newest first: during a rotation both the new and the old one. */
  secrets: readonly string[];
  /** The event id (stable across retries); `webhook-id` of the standard scheme. */
  messageId: string;
  /** Unix seconds of this attempt: sign every attempt afresh with the current time. */
  timestampSeconds: number;
  body: RawBody;
}

/**
 * The signature headers of one attempt. With several secrets the signature header carries one
 * signature per secret, space-separated, so receivers holding any one of them verify it.
 */
export function signatureHeaders(input: SignatureHeadersInput): Record<string, string> {
  if (input.secrets.length === 0) throw new Error('at least one secret is needed to sign');
  const ts = input.timestampSeconds;
  if (input.scheme === 'standard') {
    return {
      'webhook-id': input.messageId,
      'webhook-timestamp': String(ts),
      'webhook-signature': input.secrets.map((s) => `v1,${signStandardPayload(s, input.messageId, ts, input.body)}`).join(' '),
    };
  }
  return {
    'x-service-signature': input.secrets.map((s) => `sha256=${signServicePayload(s, ts, input.body)}`).join(' '),
    'x-service-timestamp': String(ts),
  };
}
