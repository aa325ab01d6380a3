import { Hono } from 'hono';
import type { AppEnv } from '../env.js';
import type { HealthReport } from '../../health/healthService.js';

export interface HealthRouteDeps {
  check(): Promise<HealthReport>;
  /**
   * Set in production: the opaque, stable label shown instead of a customer's webhook host to
   * callers without an `admin` key (see hostLabel). Unset: every caller sees host names.
   */
  hostLabel?: (host: string) => string;
}

/** `GET /health` runs the checks; `HEAD /health` answers 200 whenever the process serves, running none. */
export function createHealthRoutes(deps: HealthRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // A shared report (see cachedHealth) is serialized once per audience, not once per request.
  const full = new WeakMap<HealthReport, string>();
  const labelled = new WeakMap<HealthReport, string>();
  app.get('/health', async (c) => {
    c.header('Cache-Control', 'no-store');
    // Hono routes HEAD through the GET handler; the liveness probe must not touch any component.
    // Same content type as GET, as HEAD promises.
    if (c.req.raw.method === 'HEAD') return c.body(null, 200, { 'Content-Type': 'application/json' });
    const report = await deps.check();
    const hide = deps.hostLabel !== undefined && c.get('auth')?.isAdmin !== true;
    const cache = hide ? labelled : full;
    let body = cache.get(report);
    if (body === undefined) cache.set(report, (body = JSON.stringify(hide ? withLabels(report, deps.hostLabel!) : report)));
    return c.body(body, report.status === 'unhealthy' ? 503 : 200, { 'Content-Type': 'application/json' });
  });
  return app;
}

function withLabels(report: HealthReport, label: (host: string) => string): HealthReport {
  return { ...report, circuitBreakers: Object.fromEntries(Object.entries(report.circuitBreakers).map(([host, b]) => [label(host), b])) };
}
