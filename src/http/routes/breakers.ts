import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import type { Db } from '../../db/database.js';
import type { BreakerInfo, BreakerRegistry } from '../../webhooks/breakerRegistry.js';
import type { OutboxSignal } from '../../webhooks/outbox.js';
import { pendingByEndpoint } from '../../webhooks/sql/breakers.js';
import type { AppEnv } from '../env.js';
import { notFound } from '../errors.js';
import { requireScope } from '../middleware/auth.js';

export interface BreakerRouteDeps {
  db: Db;
  breakers: Pick<BreakerRegistry, 'load' | 'list' | 'reset'>;
  /** Wakes the dispatcher so deliveries a reset breaker held back go out at once. */
  signal: OutboxSignal;
}

/** A short stable id of an endpoint's breaker, usable as `{key}` in the reset route. */
export function breakerId(endpoint: string): string {
  return `brk_${createHash('sha256').update(endpoint).digest('hex').slice(0, 16)}`;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function present(b: BreakerInfo, pending: Map<string, number>) {
  return {
    id: breakerId(b.endpoint),
    endpoint: b.endpoint,
    host: b.host,
    state: b.state,
    failures: b.failures,
    openedAt: iso(b.openedAt),
    nextTrialAt: b.state === 'closed' ? null : iso(b.nextTrialAt),
    pendingDeliveries: pending.get(b.endpoint) ?? 0,
  };
}

/** `GET /breakers` and `POST /breakers/:key/reset` (admin; docs/api.md). Mount at `/`. */
export function createBreakerRoutes(deps: BreakerRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/breakers', async (c) => {
    requireScope(c, 'admin');
    await deps.breakers.load();
    const pending = await pendingByEndpoint(deps.db);
    const order = { open: 0, 'half-open': 1, closed: 2 } as const;
    const list = deps.breakers
      .list()
      .sort((a, b) => order[a.state] - order[b.state] || a.host.localeCompare(b.host) || a.endpoint.localeCompare(b.endpoint));
    return c.json({ breakers: list.map((b) => present(b, pending)) });
  });

  // `key`: a breaker's id (`brk_…`), its endpoint (URL-encoded) or a host name (every endpoint of that host).
  app.post('/breakers/:key/reset', async (c) => {
    requireScope(c, 'admin');
    const key = c.req.param('key');
    await deps.breakers.load();
    const byId = deps.breakers.list().find((b) => breakerId(b.endpoint) === key);
    const reset = await deps.breakers.reset(byId ? byId.endpoint : key);
    if (reset.length === 0) throw notFound(`No circuit breaker matches ${JSON.stringify(key.slice(0, 200))}`);
    deps.signal.notify();
    c.get('logger').info({ component: 'breakers', endpoints: reset }, 'breakers reset by an operator');
    const pending = await pendingByEndpoint(deps.db);
    const now = new Set(reset);
    return c.json({ breakers: deps.breakers.list().filter((b) => now.has(b.endpoint)).map((b) => present(b, pending)) });
  });

  return app;
}
