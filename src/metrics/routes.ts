import { createHash, timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import type { Metrics } from './metrics.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * `GET /metrics` (Prometheus text format); with a token set, only `Authorization: Bearer <token>`.
 * In production without a token the service does not mount it (src/app/service.ts).
 */
export function createMetricsRoutes(deps: { metrics: Metrics; token: string | undefined }): Hono {
  const app = new Hono();
  app.get('/', async (c) => {
    if (deps.token !== undefined) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')?.[1] ?? '';
      // Compare digests so the comparison is constant-time whatever the presented length.
      if (!timingSafeEqual(digest(presented), digest(deps.token))) {
        c.header('WWW-Authenticate', 'Bearer realm="metrics"');
        return c.json({ error: { code: 'unauthorized', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' } }, 401);
      }
    }
    const text = await deps.metrics.render();
    return c.body(text, 200, { 'content-type': deps.metrics.contentType, 'cache-control': 'no-store' });
  });
  return app;
}
