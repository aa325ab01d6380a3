import { Hono } from 'hono';
import { createLaunchSubmitter, quoteLaunch, type SubmitLaunchDeps } from '../../launches/submitLaunch.js';
import { presentLaunch } from '../../launches/present.js';
import { listWatches } from '../../watcher/store.js';
import { presentMigration } from '../../watcher/graduation/store.js';
import { findLaunch, findSteps, findStepsOf, listLaunches } from '../../launches/store.js';
import type { LaunchStatus } from '../../db/schema.js';
import type { Signing } from '../../launches/signing/signing.js';
import { invalidRequest, notFound } from '../errors.js';
import type { AppEnv } from '../env.js';
import { readJson } from '../middleware/bodyGuards.js';
import { requireScope } from '../middleware/auth.js';
import { paginationBlock, readPage } from '../pagination.js';

/** `signing`: creator-signed launches' signing request and signatures (docs/signing.md). */
export type LaunchRouteDeps = SubmitLaunchDeps & { signing?: Signing | undefined };

const STATUSES: LaunchStatus[] = ['awaiting_signatures', 'queued', 'processing', 'complete', 'failed'];

/** `POST/GET /launches`, `GET /launches/:id`. */
export function createLaunchRoutes(deps: LaunchRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const submitLaunch = createLaunchSubmitter(deps);

  app.post('/', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const body = await readJson(c);
    const outcome = await submitLaunch({ owner: auth.owner, body, idempotencyKey: c.req.header('idempotency-key'), requestId: c.get('requestId'), logger: c.get('logger') });
    if (outcome.kind === 'replayed') c.header('Idempotent-Replayed', 'true');
    c.header('Location', `/api/launches/${outcome.launch.id}`);
    return c.json({ launch: presentLaunch(outcome.launch, outcome.steps) }, 202);
  });

  app.post('/quote', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const funding = deps.funding;
    if (!funding) throw notFound('Quotes need funding wallets, which this service does not run');
    const body = await readJson(c);
    return c.json({ quote: await quoteLaunch({ ...deps, funding }, { owner: auth.owner, body, logger: c.get('logger') }) });
  });

  app.get('/', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const page = readPage((n) => c.req.query(n), { defaultLimit: 50, maxLimit: 200 });
    const status = c.req.query('status');
    if (status !== undefined && !STATUSES.includes(status as LaunchStatus)) {
      throw invalidRequest(`status must be one of ${STATUSES.join(', ')}`, { fields: [{ field: 'status', message: 'unknown status' }] });
    }
    const { rows, total } = await listLaunches(deps.db, {
      owner: auth.isAdmin ? undefined : auth.owner,
      status: status as LaunchStatus | undefined,
      ...page,
    });
    const steps = await findStepsOf(deps.db, rows.map((r) => r.id));
    return c.json({ launches: rows.map((r) => presentLaunch(r, steps.get(r.id) ?? [])), pagination: paginationBlock(page, rows.length, total) });
  });

  // Creator-signed launches (docs/signing.md): what to sign, and the signatures.
  app.get('/:id/signing', async (c) => {
    const auth = requireScope(c, 'launches:read');
    if (!deps.signing) throw notFound('This service does not run creator-signed launches');
    return c.json({ signing: await deps.signing.request(c.req.param('id'), auth.isAdmin ? undefined : auth.owner) });
  });

  app.post('/:id/signatures', async (c) => {
    const auth = requireScope(c, 'launches:write');
    if (!deps.signing) throw notFound('This service does not run creator-signed launches');
    const body = await readJson(c);
    return c.json({ signing: await deps.signing.submit(c.req.param('id'), auth.isAdmin ? undefined : auth.owner, body) });
  });

  app.get('/:id', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const launch = await findLaunch(deps.db, c.req.param('id'), auth.isAdmin ? undefined : auth.owner);
    if (!launch) throw notFound(`Launch ${c.req.param('id')} not found`);
    // What the chain watcher follows since the launch completed (docs/watcher.md), with cursors and last activity.
    return c.json({ launch: { ...presentLaunch(launch, await findSteps(deps.db, launch.id)), watches: await listWatches(deps.db, launch.id), graduation: await presentMigration(deps.db, launch.id) } });
  });

  return app;
}
