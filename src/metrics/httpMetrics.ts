import type { MiddlewareHandler } from 'hono';
import type { Metrics } from './metrics.js';

/**
 * Counts every answered request by its route pattern (`/api/launches/:id`), so raw paths never
 * become labels; a request no route matched is `unmatched`.
 */
export function observeRequests(metrics: Pick<Metrics, 'observeRequest'>): MiddlewareHandler {
  return async function observeRequests(c, next) {
    const started = performance.now();
    try {
      await next();
    } finally {
      const pattern = c.req.routePath;
      const route = pattern.endsWith('*') ? 'unmatched' : pattern;
      metrics.observeRequest(c.req.method, route, c.res.status, (performance.now() - started) / 1000);
    }
  };
}
