import { Hono } from 'hono';
import type { AppEnv } from '../env.js';
import type { HealthReport } from '../../health/healthService.js';

/** `GET /health` runs the checks; `HEAD /health` answers 200 whenever the process serves, running none. */
export function createHealthRoutes(deps: { check(): Promise<HealthReport> }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/health', async (c) => {
    c.header('Cache-Control', 'no-store');
    // Hono routes HEAD through the GET handler; the liveness probe must not touch any component.
    if (c.req.raw.method === 'HEAD') return c.body(null, 200);
    const report = await deps.check();
    return c.json(report, report.status === 'unhealthy' ? 503 : 200);
  });
  return app;
}
