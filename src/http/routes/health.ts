import { Hono } from 'hono';
import type { AppEnv } from '../env.js';
import type { HealthReport } from '../../health/healthService.js';

/** `GET /health` runs the checks; `HEAD /health` answers 200 whenever the process serves, running none. */
export function createHealthRoutes(deps: { check(): Promise<HealthReport> }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // A shared report (see cachedHealth) is serialized once, not once per request.
  const bodies = new WeakMap<HealthReport, string>();
  app.get('/health', async (c) => {
    c.header('Cache-Control', 'no-store');
    // Hono routes HEAD through the GET handler; the liveness probe must not touch any component.
    if (c.req.raw.method === 'HEAD') return c.body(null, 200);
    const report = await deps.check();
    let body = bodies.get(report);
    if (body === undefined) bodies.set(report, (body = JSON.stringify(report)));
    return c.body(body, report.status === 'unhealthy' ? 503 : 200, { 'Content-Type': 'application/json' });
  });
  return app;
}
