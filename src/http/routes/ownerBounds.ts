import { Hono } from 'hono';
import { effectiveBounds, OWNER_BOUNDS, readBoundOverrides, writeBoundOverrides, type BoundOverrides } from '../../bounds/ownerBounds.js';
import { OWNER_LIMIT_CEILINGS, type OwnerLimits } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { invalidRequest } from '../errors.js';
import type { AppEnv } from '../env.js';
import { readJson } from '../middleware/bodyGuards.js';
import { requireScope } from '../middleware/auth.js';

export interface OwnerBoundRouteDeps {
  db: Db;
  clock: Clock;
  /** The configured bounds (MAX_ENDPOINTS_PER_OWNER, …): what holds for an owner without an override. */
  defaults: OwnerLimits;
}

const OWNER = /^[A-Za-z0-9._:@-]{1,100}$/;

/** `GET` and `PUT /owners/:owner/bounds` (docs/api.md, "Owner bounds"), scope `admin`. */
export function createOwnerBoundRoutes(deps: OwnerBoundRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const present = (owner: string, overrides: BoundOverrides) => ({ bounds: { owner, ...effectiveBounds(deps.defaults, overrides), overrides } });

  app.get('/:owner/bounds', async (c) => {
    requireScope(c, 'admin');
    const owner = readOwner(c.req.param('owner'));
    return c.json(present(owner, await readBoundOverrides(deps.db, owner)));
  });

  app.put('/:owner/bounds', async (c) => {
    requireScope(c, 'admin');
    const owner = readOwner(c.req.param('owner'));
    const patch = readOverrides(await readJson(c));
    return c.json(present(owner, await writeBoundOverrides(deps.db, owner, patch, deps.clock.now())));
  });

  return app;
}

function readOwner(owner: string): string {
  if (!OWNER.test(owner)) throw invalidRequest('owner must be 1 to 100 letters, digits or ._:@-', { fields: [{ field: 'owner', message: 'invalid' }] });
  return owner;
}

/** The overrides a `PUT` names: each an integer from 0 to its ceiling, or `null` to go back to the default. */
function readOverrides(body: unknown): Partial<BoundOverrides> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The body must be a JSON object of bounds');
  const raw = body as Record<string, unknown>;
  const fields: Array<{ field: string; message: string }> = [];
  const patch: Partial<BoundOverrides> = {};
  for (const key of Object.keys(raw)) {
    if (!(OWNER_BOUNDS as readonly string[]).includes(key)) fields.push({ field: key, message: `unknown bound; one of ${OWNER_BOUNDS.join(', ')}` });
  }
  for (const bound of OWNER_BOUNDS) {
    if (!(bound in raw)) continue;
    const value = raw[bound];
    const ceiling = OWNER_LIMIT_CEILINGS[bound];
    if (value === null) patch[bound] = null;
    else if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= ceiling) patch[bound] = value;
    else fields.push({ field: bound, message: `must be an integer from 0 to ${ceiling}, or null for the default` });
  }
  if (fields.length > 0) throw invalidRequest('The bounds are invalid', { fields });
  if (Object.keys(patch).length === 0) throw invalidRequest(`Name at least one bound: ${OWNER_BOUNDS.join(', ')}`);
  return patch;
}
