import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { API_VERSION } from './app.js';
import type { RequestLimiter } from './middleware/rateLimit.js';
import { isSaneRequestId } from './middleware/requestId.js';
import { HEALTH_HEADERS, type HealthResponder } from './routes/health.js';

/**
 * A handler that runs in the node:http request listener before @hono/node-server builds a
 * `Request`; it answers the request or calls `next()` to hand it to the app, untouched.
 */
export type RequestFastPath = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

export interface HealthFastPathDeps {
  health: HealthResponder;
  limiter: RequestLimiter;
  logger: Logger;
  /** The request metrics the app's `observe` middleware records (metrics.observeRequest). */
  observe?: (method: string, route: string, status: number, seconds: number) => void;
}

const PATH = '/api/health';

/**
 * `GET`/`HEAD /api/health` of an anonymous caller, answered without the framework: monitors and
 * load balancers probe it all the time, and under load it must cost next to nothing
 * (docs/architecture.md, Health). It answers exactly what the app's route does through its middlewares —
 * status, body, `Cache-Control`, `Content-Type`, `X-Request-ID` (echoed when sane), the API version,
 * the rate-limit headers (a peek: health never spends the budget), the request metrics and the
 * request log line — and `test/http/healthFastPath.test.ts` compares the two byte for byte.
 * Anything else goes to the app: another path or a query string (so the `%00` guard still sees
 * it), any credentials (an admin sees host names, a refused key is a 401), a check that throws.
 * The server's socket bounds (request timeout, connections per client) apply before either.
 */
export function healthFastPath(deps: HealthFastPathDeps): RequestFastPath {
  const { health, limiter, logger, observe } = deps;
  const limit = String(limiter.limit);
  return function healthFastPath(req, res, next) {
    const method = req.method;
    if (req.url !== PATH || (method !== 'GET' && method !== 'HEAD')) return next();
    const headers = req.headers;
    if (headers.authorization !== undefined || headers['x-api-key'] !== undefined) return next();
    const started = performance.now();
    const answered = method === 'HEAD' ? undefined : health(false);
    const verdict = limiter.take(`ip:${req.socket.remoteAddress ?? 'unknown'}`, true);
    void Promise.all([answered, verdict]).then(
      ([answer, { remaining, resetSeconds }]) => {
        // Node joins repeated headers with ", " as undici's Headers does (only set-cookie is a list).
        const supplied = headers['x-request-id'] as string | undefined;
        const requestId = isSaneRequestId(supplied) ? supplied : randomUUID();
        const status = answer?.status ?? 200;
        // The names and order the app's response has (undici's Headers: lower case, sorted).
        res.writeHead(status, {
          'cache-control': HEALTH_HEADERS['Cache-Control'],
          'content-type': HEALTH_HEADERS['Content-Type'],
          'service-api-version': API_VERSION,
          'x-ratelimit-limit': limit,
          'x-ratelimit-remaining': String(remaining),
          'x-ratelimit-reset': String(resetSeconds),
          'x-request-id': requestId,
          // As @hono/node-server adds it (a HEAD answer has none).
          ...(answer ? { 'Content-Length': Buffer.byteLength(answer.body) } : {}),
        });
        res.end(answer?.body);
        const elapsed = performance.now() - started;
        observe?.(method, PATH, status, elapsed / 1000);
        const level = status < 500 ? 'debug' : 'info';
        // The line the app's requestContext writes (see there).
        if (logger.isLevelEnabled(level)) logger[level]({ requestId, method, path: PATH, status, durationMs: Math.round(elapsed * 100) / 100 }, 'request');
      },
      // The app answers a failure in its own way (the error envelope, logged with a request id).
      () => next(),
    ).catch((error: unknown) => logger.error({ err: error }, 'health fast path failed'));
  };
}
