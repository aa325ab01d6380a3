import { Hono, type MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { ApiError, errorBody, fromDomainError } from './errors.js';
import type { AppEnv } from './env.js';
import { authenticate, rejectRefusedKey } from './middleware/auth.js';
import { jsonBodyGuard } from './middleware/bodyGuards.js';
import { rateLimit, type RequestLimiter } from './middleware/rateLimit.js';
import { requestContext } from './middleware/requestId.js';
import { refuseNulInUrl } from './middleware/urlGuard.js';
import { originGuard } from './middleware/originGuard.js';
import { shareLoop } from './middleware/loopBudget.js';
import { traceRequests } from './middleware/tracing.js';
import { clientAddressMiddleware, type TrustProxy } from './clientAddress.js';
import type { LoopBudget } from '../lib/loopBudget.js';

export const API_VERSION = '2026-10-01';

export interface AppDeps {
  db: Db;
  logger: Logger;
  limiter: RequestLimiter;
  bodyLimitBytes: number;
  /** Sub-apps mounted under /api, e.g. `['/', healthRoutes]`. */
  routes: Array<[path: string, app: Hono<AppEnv>]>;
  /** Runs around every request, first (request metrics). */
  observe?: MiddlewareHandler;
  /** Sub-apps mounted outside /api, e.g. `['/metrics', metricsRoutes]`. */
  pages?: Array<[path: string, app: Hono<any>]>;
  /** Browser origins `/mcp` accepts besides the service's own loopback origin (MCP_ALLOWED_ORIGINS). */
  mcpAllowedOrigins?: readonly string[];
  /** TRUST_PROXY: whose X-Forwarded-For names the caller (src/http/clientAddress.ts); nobody's without it. */
  trustProxy?: TrustProxy;
  /** Request work takes its turn on the event loop (src/lib/loopBudget.ts); none in tests that build the app alone. */
  loopBudget?: LoopBudget;
}

const STATUS_CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'rate_limited',
  503: 'service_unavailable',
};

function docsUrl(requestUrl: string): string {
  return new URL('/api/openapi', requestUrl).toString();
}

/**
 * The methods the app's routes answer on a path (HEAD wherever GET is), computed from the routes
 * registered so far; a path no route matches gets none (then it is a 404, not a 405). Paths match
 * as the router matches them, exactly: `/metrics/` is not `/metrics`, so a trailing slash is a 404
 * like any unknown path and does not reveal the route (a 405 would).
 */
function allowedMethods(app: Hono<AppEnv>): (path: string) => string[] {
  let table: Array<{ pattern: RegExp; method: string }> | undefined;
  return (path) => {
    table ??= app.routes
      .filter((r) => r.method !== 'ALL')
      .map((r) => ({
        method: r.method,
        pattern: new RegExp(`^${r.path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}$`),
      }));
    const methods = new Set(table.filter((r) => r.pattern.test(path)).map((r) => r.method));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };
}

/**
 * PostgreSQL refuses text holding a NUL character (SQLSTATE 22021 character_not_in_repertoire,
 * 22P05 untranslatable_character) where SQLite stores it: input the routes let through is the
 * caller's fault, a 400, not a 500.
 */
function refusedTextByDatabase(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '22021' || code === '22P05';
}

/** Builds the HTTP app: tracing, limits, auth, the routes, one error envelope for everything. */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  if (deps.observe) app.use('*', deps.observe);
  app.use('*', traceRequests());
  app.use('*', requestContext({ logger: deps.logger, apiVersion: API_VERSION }));
  if (deps.loopBudget) app.use('*', shareLoop(deps.loopBudget));
  app.use('*', refuseNulInUrl());
  if (deps.trustProxy && !deps.trustProxy.empty) app.use('*', clientAddressMiddleware(deps.trustProxy));
  app.use('/api/*', authenticate({ db: deps.db }));
  app.use('/api/*', rateLimit({ limiter: deps.limiter, exempt: (path) => path === '/api/health' }));
  app.use('/api/*', rejectRefusedKey());
  app.use('/api/*', jsonBodyGuard({ limitBytes: deps.bodyLimitBytes }));
  // `/mcp` (mounted by the service after this) is held to the same key, rate and body bounds, and
  // checks the browser Origin first (docs/mcp.md).
  app.use('/mcp/*', originGuard({ allowedOrigins: deps.mcpAllowedOrigins ?? [] }));
  app.use('/mcp/*', authenticate({ db: deps.db }));
  app.use('/mcp/*', rateLimit({ limiter: deps.limiter }));
  app.use('/mcp/*', rejectRefusedKey());
  app.use('/mcp/*', jsonBodyGuard({ limitBytes: deps.bodyLimitBytes }));
  for (const [path, routes] of deps.routes) app.route(`/api${path === '/' ? '' : path}`, routes);
  for (const [path, routes] of deps.pages ?? []) app.route(path, routes);

  const allowed = allowedMethods(app);
  app.notFound((c) => {
    const methods = allowed(c.req.path);
    if (methods.length > 0) {
      const error = new ApiError(405, 'method_not_allowed', `${c.req.method} is not allowed on ${c.req.path}; use ${methods.join(' or ')}`, { allowed: methods }, {
        docs_url: docsUrl(c.req.url),
      });
      c.header('Allow', methods.join(', '));
      return c.json(errorBody(error), 405);
    }
    const error = new ApiError(404, 'not_found', `No route for ${c.req.method} ${c.req.path}`, undefined, { docs_url: docsUrl(c.req.url) });
    return c.json(errorBody(error), 404);
  });

  app.onError((err, c) => {
    let error: ApiError;
    const domain = fromDomainError(err);
    if (err instanceof ApiError) {
      error = err;
    } else if (domain) {
      error = domain;
    } else if (refusedTextByDatabase(err)) {
      error = new ApiError(400, 'invalid_request', 'The request carries a character the database cannot store (a NUL character)');
    } else if (err instanceof HTTPException && err.status < 500) {
      error = new ApiError(err.status, STATUS_CODES[err.status] ?? 'invalid_request', err.message || 'Request refused');
    } else {
      (c.get('logger') ?? deps.logger).error({ err }, 'unhandled error');
      error = new ApiError(500, 'internal_error', 'An internal error occurred; it has been logged with this request id');
    }
    if (error.status === 404 && error.extra?.docs_url === undefined) {
      error = new ApiError(404, error.code, error.message, error.details, { ...error.extra, docs_url: docsUrl(c.req.url) }, error.headers);
    }
    for (const [name, value] of Object.entries(error.headers ?? {})) c.header(name, value);
    return c.json(errorBody(error), error.status as ContentfulStatusCode);
  });
  return app;
}
