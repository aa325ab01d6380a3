import { Hono } from 'hono';
import type { AppEnv } from '../env.js';
import type { HealthReport } from '../../health/healthService.js';

/** `GET /health` runs the checks; `HEAD /health` answers 200 whenever the process serves, running none. */
export function createHealthRoutes(deps: { check(): Promise<HealthReport> }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.on('HEAD', '/health', (c) => {
    c.header('Cache-Control', 'no-store');
    return c.body(null, 200);
  });
  app.get('/health', async (c) => {
    const report = await deps.check();
    c.header('Cache-Control', 'no-store');
    return c.json(report, report.status === 'unhealthy' ? 503 : 200);
  });
  return app;
}
