import { describe, expect, it } from 'vitest';
import { cachedHealth } from '../../src/health/cachedHealth.js';
import { checkHealth, type HealthDeps, type HealthReport } from '../../src/health/healthService.js';
import { createApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/middleware/rateLimit.js';
import { createHealthResponder, createHealthRoutes } from '../../src/http/routes/health.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startTestService } from '../support/service.js';
import { openDatabase } from '../../src/db/database.js';

function healthApp(probes: Partial<HealthDeps['probes']>, calls = { count: 0 }) {
  const pass = async () => undefined;
  const deps: HealthDeps = {
    clock: systemClock,
    version: '9.9.9',
    startedAt: Date.now() - 5000,
    timeoutMs: 300,
    breakers: { snapshot: () => ({ 'hooks.example.com': { state: 'open', failures: 3 } }) },
    probes: { database: pass, chain: pass, cache: pass, ...probes },
  };
  const { db } = openDatabase(':memory:');
  return createApp({
    db,
    logger: silentLogger(),
    limiter: new RateLimiter(100, systemClock),
    bodyLimitBytes: 1024,
    routes: [['/', createHealthRoutes(createHealthResponder({ check: () => (calls.count++, checkHealth(deps)) }))]],
  });
}

describe('GET /api/health', () => {
  it('answers 200 healthy with every field from the real service on its embedded defaults', async () => {
    const t = await startTestService();
    try {
      const res = await t.request('/api/health');
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, any>;
      expect(body.status).toBe('healthy');
      expect(Object.keys(body).sort()).toEqual(['checks', 'circuitBreakers', 'status', 'timestamp', 'uptime', 'version']);
      expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
      for (const name of ['database', 'chain', 'cache']) {
        expect(body.checks[name].status).toBe('pass');
        expect(typeof body.checks[name].latencyMs).toBe('number');
      }
      expect(body.checks.chain.message).toMatch(/^embedded slot \d+/);
      expect(typeof body.uptime).toBe('number');
      expect(body.circuitBreakers).toEqual({});
    } finally {
      await t.close();
    }
  });

  it('answers 503 unhealthy when the database check fails', async () => {
    const res = await healthApp({ database: async () => Promise.reject(new Error('disk I/O error')) }).request('/api/health');
    expect(res.status).toBe(503);
    const body = (await res.json()) as Record<string, any>;
    expect(body.status).toBe('unhealthy');
    expect(body.checks.database).toMatchObject({ status: 'fail', message: 'disk I/O error' });
  });

  it('answers 503 when the real database is closed under the service', async () => {
    const t = await startTestService();
    try {
      await t.service.db.destroy();
      const res = await t.request('/api/health');
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).checks.database.status).toBe('fail');
    } finally {
      await t.close().catch(() => undefined);
    }
  });

  it('answers 200 degraded when only the cache check fails', async () => {
    const res = await healthApp({ cache: async () => Promise.reject(new Error('stale')) }).request('/api/health');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(body.status).toBe('degraded');
    expect(body.checks.cache.status).toBe('fail');
    expect(body.circuitBreakers).toEqual({ 'hooks.example.com': { state: 'open', failures: 3 } });
  });

  it('answers within its bound when a check hangs', async () => {
    const started = performance.now();
    const res = await healthApp({ chain: () => new Promise(() => undefined) }).request('/api/health');
    const elapsed = performance.now() - started;
    expect(res.status).toBe(503);
    const body = (await res.json()) as Record<string, any>;
    expect(body.checks.chain).toMatchObject({ status: 'fail', message: 'timed out after 300 ms' });
    expect(elapsed).toBeLessThan(15_000); // the hung check never answers: only the 300 ms bound ends it
  });

  it('HEAD answers 200 with an empty body and runs no checks', async () => {
    const calls = { count: 0 };
    const res = await healthApp({}, calls).request('/api/health', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(calls.count).toBe(0);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });
});

describe('shared health reports', () => {
  it('runs the checks once for concurrent requests and again once the report is older than its bound', async () => {
    const clock = manualClock();
    let runs = 0;
    const run = async (): Promise<HealthReport> => {
      runs++;
      await new Promise((r) => setTimeout(r, 5));
      return { status: 'healthy', timestamp: new Date(clock.now()).toISOString(), version: 'x', checks: {} as HealthReport['checks'], uptime: 0, circuitBreakers: {} };
    };
    const health = cachedHealth(run, clock, 1000);
    const burst = await Promise.all([health(), health(), health()]);
    expect(runs).toBe(1);
    expect(new Set(burst).size).toBe(1);
    clock.advance(999);
    await health();
    expect(runs).toBe(1);
    clock.advance(1);
    const fresh = await health();
    expect(runs).toBe(2);
    expect(fresh.timestamp).toBe(new Date(clock.now()).toISOString());
  });
});
