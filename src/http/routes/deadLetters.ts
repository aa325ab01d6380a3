import { Hono } from 'hono';
import { presentDeadLetter } from '../../deadLetters/present.js';
import { resolveDeadLetter, retryDeadLetter, type DeadLetterRetryDeps } from '../../deadLetters/retry.js';
import { countDeadLetters, getDeadLetter, listDeadLetters, type DeadLetterFilter } from '../../deadLetters/store.js';
import type { DeadLetterRow } from '../../db/schema.js';
import type { AppEnv } from '../env.js';
import { invalidRequest, notFound } from '../errors.js';
import { requireScope } from '../middleware/auth.js';
import { paginationBlock, readPage } from '../pagination.js';

export type DeadLetterRouteDeps = DeadLetterRetryDeps;

const KINDS: DeadLetterRow['kind'][] = ['launch', 'delivery', 'watch'];
const STATUSES: DeadLetterRow['status'][] = ['open', 'retried', 'resolved'];

function readFilter(query: (name: string) => string | undefined): DeadLetterFilter {
  const kind = query('kind');
  const status = query('status');
  const fields: Array<{ field: string; message: string }> = [];
  if (kind !== undefined && !KINDS.includes(kind as DeadLetterRow['kind'])) fields.push({ field: 'kind', message: `must be one of ${KINDS.join(', ')}` });
  if (status !== undefined && !STATUSES.includes(status as DeadLetterRow['status'])) fields.push({ field: 'status', message: `must be one of ${STATUSES.join(', ')}` });
  if (fields.length > 0) throw invalidRequest('Invalid dead letter filter', { fields });
  return { kind: kind as DeadLetterRow['kind'] | undefined, status: status as DeadLetterRow['status'] | undefined };
}

/** `GET /dead-letters`, `GET /dead-letters/:id`, `POST /dead-letters/:id/retry|resolve` (admin). Mount at `/`. */
export function createDeadLetterRoutes(deps: DeadLetterRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function find(id: string): Promise<DeadLetterRow> {
    const dl = await getDeadLetter(deps.db, id);
    if (!dl) throw notFound(`Dead letter ${id} not found`);
    return dl;
  }

  app.get('/dead-letters', async (c) => {
    requireScope(c, 'admin');
    const filter = readFilter((name) => c.req.query(name));
    const page = readPage((name) => c.req.query(name), { defaultLimit: 50, maxLimit: 200 });
    const rows = await listDeadLetters(deps.db, filter, page.limit, page.offset);
    const total = await countDeadLetters(deps.db, filter);
    return c.json({ deadLetters: rows.map(presentDeadLetter), pagination: paginationBlock(page, rows.length, total) });
  });

  app.get('/dead-letters/:id', async (c) => {
    requireScope(c, 'admin');
    return c.json({ deadLetter: presentDeadLetter(await find(c.req.param('id'))) });
  });

  app.post('/dead-letters/:id/retry', async (c) => {
    requireScope(c, 'admin');
    const retried = await retryDeadLetter(deps, await find(c.req.param('id')));
    c.get('logger').info({ component: 'dead-letters', deadLetterId: retried.id, kind: retried.kind, launchId: retried.launch_id }, 'dead letter retried');
    return c.json({ deadLetter: presentDeadLetter(retried) }, 202);
  });

  app.post('/dead-letters/:id/resolve', async (c) => {
    requireScope(c, 'admin');
    const resolved = await resolveDeadLetter(deps, await find(c.req.param('id')));
    return c.json({ deadLetter: presentDeadLetter(resolved) });
  });

  return app;
}
