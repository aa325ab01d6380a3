import { Hono } from 'hono';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { OutboxSignal } from '../../webhooks/outbox.js';
import { presentDelivery } from '../../webhooks/present.js';
import { redeliverEvent } from '../../webhooks/redeliver.js';
import { listAttempts, type AttemptRow } from '../../webhooks/sql/attempts.js';
import { getDelivery, getLaunchTarget, listLaunchDeliveries } from '../../webhooks/sql/deliveryQueries.js';
import type { AppEnv, AuthContext } from '../env.js';
import { notFound } from '../errors.js';
import { requireScope } from '../middleware/auth.js';
import { paginationBlock, readPage } from '../pagination.js';

export interface DeliveryRouteDeps {
  db: Db;
  clock: Clock;
  signal: OutboxSignal;
  /** MAX_REDELIVERIES_PER_DELIVERY (default: the service's). */
  maxRedeliveries?: number;
}

// Another owner's resource answers 404, so ids of other tenants cannot be probed.
const visible = (auth: AuthContext, owner: string) => auth.isAdmin || auth.owner === owner;

/** `GET /launches/:id/deliveries` and `POST /deliveries/:id/redeliver`. Mount at `/`. */
export function createDeliveryRoutes(deps: DeliveryRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/launches/:id/deliveries', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const launchId = c.req.param('id');
    const target = await getLaunchTarget(deps.db, launchId);
    if (!target || !visible(auth, target.owner)) throw notFound(`Launch ${launchId} not found`);
    const page = readPage((n) => c.req.query(n), { defaultLimit: 50, maxLimit: 200 });
    const { rows, total } = await listLaunchDeliveries(deps.db, launchId, page);
    const byDelivery = new Map<string, AttemptRow[]>();
    for (const a of await listAttempts(deps.db, rows.map((d) => d.id))) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
    return c.json({
      deliveries: rows.map((d) => presentDelivery(d, byDelivery.get(d.id) ?? [])),
      pagination: paginationBlock(page, rows.length, total),
    });
  });

  app.post('/deliveries/:id/redeliver', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const original = await getDelivery(deps.db, c.req.param('id'));
    if (!original || !visible(auth, original.owner)) throw notFound(`Delivery ${c.req.param('id')} not found`);
    const id = await redeliverEvent(deps.db, deps.clock, { eventId: original.event_id, launchId: original.launch_id, deliveryId: original.id }, deps.maxRedeliveries);
    deps.signal.notify();
    const created = await getDelivery(deps.db, id);
    if (!created) throw new Error(`redelivery ${id} vanished`);
    c.get('logger').info({ component: 'webhooks', launchId: original.launch_id, deliveryId: id, redeliveryOf: original.id }, 'redelivery queued');
    return c.json({ delivery: presentDelivery(created) }, 202);
  });

  return app;
}
