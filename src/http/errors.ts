import { ConflictError, InsufficientFundsError, InvalidInputError, LimitExceededError, NotFoundError, UnavailableError, UnprocessableError, type DomainError } from '../lib/errors.js';

/** A failure that becomes the error envelope `{"error": {code, message, details}}` (docs/api.md). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Members placed beside code/message inside `error` (e.g. `docs_url`). */
    readonly extra?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const invalidRequest = (message: string, details?: unknown) => new ApiError(400, 'invalid_request', message, details);
export const notFound = (message = 'Resource not found') => new ApiError(404, 'not_found', message);
export const conflict = (message: string, details?: unknown) => new ApiError(409, 'conflict', message, details);

/** The envelope body for an error. */
export function errorBody(error: ApiError): Record<string, unknown> {
  const inner: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.details !== undefined) inner.details = error.details;
  if (error.extra) Object.assign(inner, error.extra);
  return { error: inner };
}

/** The HTTP status of each domain error class (`src/lib/errors.ts`); the domain never names a status. */
const DOMAIN_STATUS: Array<[abstract new (...args: never[]) => DomainError, number]> = [
  [InvalidInputError, 400],
  [InsufficientFundsError, 402],
  [LimitExceededError, 403],
  [NotFoundError, 404],
  [ConflictError, 409],
  [UnprocessableError, 422],
  [UnavailableError, 503],
];

/** The envelope error of a domain error, or undefined when `error` is not one. */
export function fromDomainError(error: unknown): ApiError | undefined {
  for (const [type, status] of DOMAIN_STATUS) {
    if (!(error instanceof type)) continue;
    const headers = error instanceof UnavailableError && error.retryAfterSeconds !== undefined ? { 'Retry-After': String(error.retryAfterSeconds) } : undefined;
    return new ApiError(status, error.code, error.message, error.details, undefined, headers);
  }
  return undefined;
}
