/**
 * Domain errors: what a use case refuses, in domain words. They know nothing of HTTP; the HTTP
 * app's `onError` maps each class to a status and the error envelope (docs/api.md, "Errors").
 */

/** A refused operation: a stable machine `code`, a sentence for people, optional `details`. */
export abstract class DomainError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The input is malformed (a field missing, of the wrong type, out of range). */
export class InvalidInputError extends DomainError {
  constructor(message: string, details?: unknown, code = 'invalid_request') {
    super(code, message, details);
  }
}

/** The thing named does not exist (or is not visible to the caller). */
export class NotFoundError extends DomainError {
  constructor(message: string, code = 'not_found') {
    super(code, message);
  }
}

/** The thing is not in a state that allows the operation (e.g. retrying a dead letter twice). */
export class ConflictError extends DomainError {
  constructor(message: string, details?: unknown, code = 'conflict') {
    super(code, message, details);
  }
}

/**
 * A per-owner bound is reached (docs/architecture.md, "Limits and fairness"): nothing was created.
 * `limit` names the bound (its environment variable), `max` its value.
 */
export class LimitReachedError extends ConflictError {
  constructor(message: string, limit: string, max: number) {
    super(message, { limit, max }, 'limit_reached');
  }
}

/** Well-formed input the service cannot act on (e.g. a program the chain lacks). */
export class UnprocessableError extends DomainError {
  constructor(code: string, message: string, details?: unknown) {
    super(code, message, details);
  }
}

/** A dependency is unreachable right now; the same request may succeed after `retryAfterSeconds`. */
export class UnavailableError extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
    code = 'service_unavailable',
  ) {
    super(code, message);
  }
}

/** The owner's funding wallet cannot cover what the operation needs (`insufficient_funds`). */
export class InsufficientFundsError extends DomainError {
  constructor(message: string, details: { requiredLamports: string; availableLamports: string; address: string }) {
    super('insufficient_funds', message, details);
  }
}

/** A limit the operator set refuses the operation until it resets (`funding_limit_exceeded`). */
export class LimitExceededError extends DomainError {
  constructor(message: string, details: { limit: string; max: string; resetsAt: string }, code = 'funding_limit_exceeded') {
    super(code, message, details);
  }
}
