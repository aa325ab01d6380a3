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

/** What `GET /api/health` answers: the status and the serialized report for one audience. */
export interface HealthAnswer {
  status: 200 | 503;
  body: string;
}

/**
 * Answers health for a caller (`admin`: holds an admin key). One per service, shared by the Hono
 * route and the HTTP server's fast path (healthFastPath), so both serve the same bytes.
 */
export type HealthResponder = (admin: boolean) => Promise<HealthAnswer>;

/** The one header set of health beyond the request id, API version and rate-limit headers. */
export const HEALTH_HEADERS = { 'Cache-Control': 'no-store', 'Content-Type': 'application/json' } as const;

export function createHealthResponder(deps: HealthRouteDeps): HealthResponder {
  // A shared report (see cachedHealth) is serialized once per audience, not once per request.
  const full = new WeakMap<HealthReport, HealthAnswer>();
  const labelled = new WeakMap<HealthReport, HealthAnswer>();
  return async (admin) => {
    const report = await deps.check();
    const hide = deps.hostLabel !== undefined && !admin;
    const cache = hide ? labelled : full;
    let answer = cache.get(report);
    if (answer === undefined) {
      const body = JSON.stringify(hide ? withLabels(report, deps.hostLabel!) : report);
      cache.set(report, (answer = { status: report.status === 'unhealthy' ? 503 : 200, body }));
    }
    return answer;
  };
}

/** `GET /health` runs the checks; `HEAD /health` answers 200 whenever the process serves, running none. */
export function createHealthRoutes(answer: HealthResponder): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/health', async (c) => {
    c.header('Cache-Control', HEALTH_HEADERS['Cache-Control']);
    // Hono routes HEAD through the GET handler; the liveness probe must not touch any component.
    // Same content type as GET, as HEAD promises.
    if (c.req.raw.method === 'HEAD') return c.body(null, 200, { 'Content-Type': HEALTH_HEADERS['Content-Type'] });
    const { status, body } = await answer(c.get('auth')?.isAdmin === true);
    return c.body(body, status, { 'Content-Type': HEALTH_HEADERS['Content-Type'] });
  });
  return app;
}

function withLabels(report: HealthReport, label: (host: string) => string): HealthReport {
  const chain = report.checks.chain.endpoints ? { ...report.checks.chain, endpoints: report.checks.chain.endpoints.map((e) => ({ ...e, host: label(e.host) })) } : report.checks.chain;
  return {
    ...report,
    checks: { ...report.checks, chain },
    circuitBreakers: Object.fromEntries(Object.entries(report.circuitBreakers).map(([host, b]) => [label(host), b])),
  };
}
