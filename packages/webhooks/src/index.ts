/**
 * Receiver helpers for the token launch service's webhooks: verify a delivery signed with the
 * service's own scheme or with Standard Webhooks, with one secret or several (during a rotation).
 * The service signs with the same functions, so both sides share one implementation.
 */
export { WebhookVerificationError, type VerificationFailure } from './errors.js';
export {
  generateSecret,
  SECRET_PREFIX,
  signatureHeaders,
  signServicePayload,
  signStandardPayload,
  standardSecretKey,
  type RawBody,
  type SignatureHeadersInput,
  type SignatureScheme,
} from './sign.js';
export { verifyWebhook, type HeaderSource, type VerifiedWebhook, type VerifyOptions } from './verify.js';
