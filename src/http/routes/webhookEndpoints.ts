import { Hono } from 'hono';
import type { SecretBox } from '../../crypto/secretBox.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { createEndpoint, deleteEndpoint, rotateEndpointSecret, updateEndpoint } from '../../webhooks/endpoints/endpoints.js';
import { presentEndpoint } from '../../webhooks/endpoints/present.js';
import { recoverEndpoint } from '../../webhooks/endpoints/recover.js';
import { parseEndpointCreate, parseEndpointPatch, parseRecover, parseRotate } from '../../webhooks/endpoints/request.js';
import { endpointStats } from '../../webhooks/endpoints/stats.js';
import { findEndpoint, listEndpoints } from '../../webhooks/endpoints/store.js';
import type { OutboxSignal } from '../../webhooks/outbox.js';
import type { AppEnv, AuthContext } from '../env.js';
import { notFound } from '../errors.js';
import { requireScope } from '../middleware/auth.js';
import { readJson } from '../middleware/bodyGuards.js';
import { paginationBlock, readPage } from '../pagination.js';

export interface WebhookEndpointRouteDeps {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  production: boolean;
  /** Wakes the dispatcher after deliveries were queued (recover, enable). */
  signal: OutboxSignal;
  /** MAX_ENDPOINTS_PER_OWNER (default: the service's). */
  maxEndpoints?: number;
}

// An owner sees only its own endpoints (another owner's id answers 404); admin sees every owner's.
const scopeOwner = (auth: AuthContext) => (auth.isAdmin ? undefined : auth.owner);

/** `/webhook-endpoints` (docs/webhooks.md): owner-level endpoints, rotation, recover, stats. Mount at `/webhook-endpoints`. */
export function createWebhookEndpointRoutes(deps: WebhookEndpointRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const options = { requireHttps: deps.production };

  app.post('/', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const input = parseEndpointCreate(await readJson(c), options);
    const { endpoint, secret } = await createEndpoint(deps, auth.owner, input);
    c.get('logger').info({ component: 'webhook-endpoints', endpointId: endpoint.id, scheme: endpoint.signature_scheme }, 'webhook endpoint created');
    c.header('Location', `/api/webhook-endpoints/${endpoint.id}`);
    return c.json({ endpoint: presentEndpoint(endpoint, deps.clock.now(), secret) }, 201);
  });

  app.get('/', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const page = readPage((n) => c.req.query(n), { defaultLimit: 50, maxLimit: 200 });
    const { rows, total } = await listEndpoints(deps.db, scopeOwner(auth), page);
    const now = deps.clock.now();
    return c.json({ endpoints: rows.map((e) => presentEndpoint(e, now)), pagination: paginationBlock(page, rows.length, total) });
  });

  app.get('/:id', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const endpoint = await findEndpoint(deps.db, c.req.param('id'), scopeOwner(auth));
    if (!endpoint) throw notFound(`Webhook endpoint ${c.req.param('id')} not found`);
    return c.json({ endpoint: presentEndpoint(endpoint, deps.clock.now()) });
  });

  app.patch('/:id', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const patch = parseEndpointPatch(await readJson(c), options);
    const endpoint = await updateEndpoint(deps, c.req.param('id'), scopeOwner(auth), patch);
    deps.signal.notify();
    return c.json({ endpoint: presentEndpoint(endpoint, deps.clock.now()) });
  });

  app.delete('/:id', async (c) => {
    const auth = requireScope(c, 'launches:write');
    await deleteEndpoint(deps, c.req.param('id'), scopeOwner(auth));
    c.get('logger').info({ component: 'webhook-endpoints', endpointId: c.req.param('id') }, 'webhook endpoint deleted');
    return c.body(null, 204);
  });

  app.post('/:id/rotate-secret', async (c) => {
    const auth = requireScope(c, 'launches:write');
    // The body is optional here: no body rotates with the default overlap.
    const { expiresInSeconds } = parseRotate((await c.req.raw.clone().text()).trim() === '' ? undefined : await readJson(c));
    const { endpoint, secret } = await rotateEndpointSecret(deps, c.req.param('id'), scopeOwner(auth), expiresInSeconds);
    c.get('logger').info({ component: 'webhook-endpoints', endpointId: endpoint.id, overlapSeconds: expiresInSeconds }, 'webhook endpoint secret rotated');
    return c.json({ endpoint: presentEndpoint(endpoint, deps.clock.now(), secret) });
  });

  app.post('/:id/recover', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const window = parseRecover(await readJson(c), deps.clock.now());
    const ids = await recoverEndpoint(deps, c.req.param('id'), scopeOwner(auth), window);
    deps.signal.notify();
    const until = window.until === undefined ? null : new Date(window.until).toISOString();
    return c.json({ recovered: { since: new Date(window.since).toISOString(), until, deliveries: ids.length, deliveryIds: ids } }, 202);
  });

  app.get('/:id/stats', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const endpoint = await findEndpoint(deps.db, c.req.param('id'), scopeOwner(auth));
    if (!endpoint) throw notFound(`Webhook endpoint ${c.req.param('id')} not found`);
    return c.json({ stats: await endpointStats(deps.db, endpoint.id, deps.clock.now()) });
  });

  return app;
}
