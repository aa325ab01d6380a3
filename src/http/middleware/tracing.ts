import type { MiddlewareHandler } from 'hono';
import { openSpan, tracingOn } from '../../lib/tracing.js';

/**
 * One server span per request while tracing is on (docs/architecture.md, "Tracing"): it continues
 * an incoming W3C `traceparent` (a malformed one starts a new trace), and everything the request
 * does — a launch it creates, the events it records — is linked to it. Off, it only calls `next`.
 */
export function traceRequests(): MiddlewareHandler {
  return async (c, next) => {
    if (!tracingOn()) return next();
    const span = openSpan(`${c.req.method} ${c.req.path}`, {
      kind: 'server',
      parent: c.req.header('traceparent') ?? null,
      attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path },
    });
    if (!span) return next();
    try {
      await span.run(next);
    } catch (error) {
      span.end(error);
      throw error;
    }
    const route = c.req.routePath;
    if (route && route !== '*' && route !== '/*') span.updateName(`${c.req.method} ${route}`);
    span.setAttributes({ 'http.response.status_code': c.res.status, ...(route ? { 'http.route': route } : {}) });
    if (c.res.status >= 500) span.fail(`answered ${c.res.status}`);
    span.end();
  };
}
