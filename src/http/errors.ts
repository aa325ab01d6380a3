/** A failure that becomes the error envelope `{"error": {code, message, details}}` (SPEC §2). */
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
