import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors.js';
import type { AppEnv } from '../env.js';

/**
 * Refuses a URL whose path or query carries a NUL character (`%00`): no id, filter or parameter
 * of this API contains one, and PostgreSQL cannot even compare text holding one (it raises an
 * encoding error), so without this guard `/api/launches/%00` answered 404 on SQLite and 500 on
 * PostgreSQL. One 400 on both databases, before any route or query runs.
 */
export function refuseNulInUrl(): MiddlewareHandler<AppEnv> {
  return async function refuseNulInUrl(c, next) {
    if (/%00/i.test(c.req.url)) {
      throw new ApiError(400, 'invalid_request', 'The URL contains a NUL character (%00), which no path or parameter of this API accepts');
    }
    await next();
  };
}
