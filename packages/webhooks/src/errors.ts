/** Why {@link verifyWebhook} refused a delivery. Answer every one of them with 401 (or 400). */
export type VerificationFailure =
  | 'missing_header'
  | 'malformed_signature'
  | 'malformed_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'signature_mismatch'
  | 'malformed_body'
  | 'invalid_secret';

/** Thrown by `verifyWebhook`; `reason` (also `code`) says which check failed. */
export class WebhookVerificationError extends Error {
  readonly reason: VerificationFailure;

  constructor(reason: VerificationFailure, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }

  /** The same as `reason`, for code that reads `error.code`. */
  get code(): VerificationFailure {
    return this.reason;
  }
}
