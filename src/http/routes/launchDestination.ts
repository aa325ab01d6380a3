import { Hono } from 'hono';
import type { SecretBox } from '../../crypto/secretBox.js';
import type { Db } from '../../db/database.js';
import { presentLaunch } from '../../launches/present.js';
import { findLaunch, findSteps } from '../../launches/store.js';
import { parseDestinationPatch, updateLaunchDestination } from '../../launches/updateDestination.js';
import type { Clock } from '../../lib/clock.js';
import { parseJson } from '../../lib/json.js';
import type { OutboxSignal } from '../../webhooks/outbox.js';
import { listLaunchEvents } from '../../webhooks/sql/eventQueries.js';
import type { AppEnv } from '../env.js';
import { notFound } from '../errors.js';
import { requireScope } from '../middleware/auth.js';
import { readJson } from '../middleware/bodyGuards.js';
import { paginationBlock, readPage } from '../pagination.js';

export interface LaunchDestinationRouteDeps {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  production: boolean;
  /** Wakes the dispatcher: the launch's pending deliveries are due at once. */
  signal: OutboxSignal;
}

/** `PATCH /launches/:id` (fix the launch's webhook destination) and `GET /launches/:id/events`. Mount at `/launches`. */
export function createLaunchDestinationRoutes(deps: LaunchDestinationRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.patch('/:id', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const patch = parseDestinationPatch(await readJson(c), { requireHttps: deps.production });
    const launch = await updateLaunchDestination(deps, c.req.param('id'), auth.isAdmin ? undefined : auth.owner, patch);
    deps.signal.notify();
    c.get('logger').info(
      { component: 'launches', launchId: launch.id, webhookUrlChanged: patch.webhookUrl !== undefined, webhookSecretChanged: patch.webhookSecret !== undefined },
      'launch webhook destination updated',
    );
    return c.json({ launch: presentLaunch(launch, await findSteps(deps.db, launch.id)) });
  });

  app.get('/:id/events', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const page = readPage((n) => c.req.query(n), { defaultLimit: 100, maxLimit: 500 });
    const launch = await findLaunch(deps.db, c.req.param('id'), auth.isAdmin ? undefined : auth.owner);
    if (!launch) throw notFound(`Launch ${c.req.param('id')} not found`);
    const { rows, total } = await listLaunchEvents(deps.db, launch.id, page);
    const events = rows.map((e) => ({
      id: e.id,
      event: e.event,
      sequence: e.sequence,
      createdAt: new Date(Number(e.created_at)).toISOString(),
      requestId: e.request_id,
      // The envelope exactly as every delivery of this event sends it.
      payload: parseJson(e.body, null),
    }));
    return c.json({ events, pagination: paginationBlock(page, rows.length, total) });
  });

  return app;
}
