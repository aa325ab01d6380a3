import { Hono } from 'hono';
import type { RequiredProgram } from '../../chain/steps/index.js';
import { createLaunch, type CreateLaunchDeps } from '../../launches/createLaunch.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  isValidIdempotencyKey,
  releaseIdempotencyKey,
  requestHash,
} from '../../launches/idempotency.js';
import { presentLaunch } from '../../launches/present.js';
import { listWatches } from '../../watcher/store.js';
import { parseLaunchRequest, type LaunchRequest } from '../../launches/request.js';
import { findLaunch, findSteps, findStepsOf, listLaunches } from '../../launches/store.js';
import type { LaunchStatus } from '../../db/schema.js';
import { ApiError, invalidRequest, notFound } from '../errors.js';
import type { AppEnv } from '../env.js';
import { readJson } from '../middleware/bodyGuards.js';
import { requireScope } from '../middleware/auth.js';
import { paginationBlock, readPage } from '../pagination.js';

export interface LaunchRouteDeps extends CreateLaunchDeps {
  production: boolean;
  /** Keys the stored idempotency request hash (see requestHashKey). */
  requestHashKey: Buffer;
  checkCapabilities(request: LaunchRequest): Promise<RequiredProgram[]>;
}

const STATUSES: LaunchStatus[] = ['queued', 'processing', 'complete', 'failed'];

/** `POST/GET /launches`, `GET /launches/:id`. */
export function createLaunchRoutes(deps: LaunchRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/', async (c) => {
    const auth = requireScope(c, 'launches:write');
    const body = await readJson(c);
    const idempotencyKey = c.req.header('idempotency-key');
    if (idempotencyKey !== undefined && !isValidIdempotencyKey(idempotencyKey)) {
      throw invalidRequest('Idempotency-Key must be 1 to 255 printable characters', { fields: [{ field: 'Idempotency-Key', message: 'invalid' }] });
    }
    const now = deps.clock.now();
    if (idempotencyKey !== undefined) {
      const claim = await claimIdempotencyKey(deps.db, { owner: auth.owner, key: idempotencyKey, hash: requestHash(body, deps.requestHashKey), now });
      if (claim.kind === 'reused') throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
      if (claim.kind === 'in_progress') throw new ApiError(409, 'idempotency_in_progress', 'A request with this Idempotency-Key is still being processed');
      if (claim.kind === 'replay') {
        const launch = await findLaunch(deps.db, claim.launchId, auth.owner);
        if (!launch) throw notFound('The launch of this Idempotency-Key no longer exists');
        c.header('Idempotent-Replayed', 'true');
        c.header('Location', `/api/launches/${launch.id}`);
        return c.json({ launch: presentLaunch(launch, await findSteps(deps.db, launch.id)) }, 202);
      }
    }
    try {
      const parsed = parseLaunchRequest(body, { requireHttps: deps.production, publicDestinationsOnly: deps.production });
      if (!parsed.ok) throw invalidRequest('The launch request is invalid', { fields: parsed.errors });
      const missing = await deps.checkCapabilities(parsed.value).catch((error: unknown) => {
        c.get('logger').warn({ err: error }, 'capability check failed');
        throw new ApiError(503, 'service_unavailable', 'The chain could not be reached to check the programs this launch needs; retry with the same Idempotency-Key', undefined, undefined, { 'Retry-After': '5' });
      });
      if (missing.length > 0) {
        throw new ApiError(
          422,
          'chain_capability_missing',
          `The configured chain lacks ${missing.map((m) => `${m.name} (${m.programId})`).join(', ')}; provide it with CHAIN_PROGRAMS_DIR (solana program dump -u m <programId> <programId>.so) or use a cluster that has it`,
          { missing },
        );
      }
      const launchId = await createLaunch(deps, {
        owner: auth.owner,
        request: parsed.value,
        requestId: c.get('requestId'),
        inTransaction: idempotencyKey === undefined ? undefined : (trx, id) => completeIdempotencyKey(trx, { owner: auth.owner, key: idempotencyKey, launchId: id, status: 202 }),
      });
      const launch = await findLaunch(deps.db, launchId, auth.owner);
      if (!launch) throw new Error(`launch ${launchId} vanished after insert`);
      c.header('Location', `/api/launches/${launchId}`);
      return c.json({ launch: presentLaunch(launch, await findSteps(deps.db, launchId)) }, 202);
    } catch (error) {
      if (idempotencyKey !== undefined) await releaseIdempotencyKey(deps.db, auth.owner, idempotencyKey);
      throw error;
    }
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

  app.get('/:id', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const launch = await findLaunch(deps.db, c.req.param('id'), auth.isAdmin ? undefined : auth.owner);
    if (!launch) throw notFound(`Launch ${c.req.param('id')} not found`);
    // What the chain watcher follows since the launch completed (SPEC §9), with cursors and last activity.
    return c.json({ launch: { ...presentLaunch(launch, await findSteps(deps.db, launch.id)), watches: await listWatches(deps.db, launch.id) } });
  });

  return app;
}
