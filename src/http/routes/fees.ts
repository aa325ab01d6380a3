import { Hono } from 'hono';
import type { FeeClaims } from '../../fees/feeClaims.js';
import { invalidRequest } from '../errors.js';
import type { AppEnv } from '../env.js';
import { readJson } from '../middleware/bodyGuards.js';
import { requireScope } from '../middleware/auth.js';

/** `GET /launches/:id/fees`, `POST /launches/:id/fees/claim` (docs/funding.md, "Creator fees"). */
export function createFeeRoutes(deps: { fees: FeeClaims }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/:id/fees', async (c) => {
    const auth = requireScope(c, 'launches:read');
    return c.json({ fees: await deps.fees.read(auth.owner, c.req.param('id')) });
  });

  app.post('/:id/fees/claim', async (c) => {
    const auth = requireScope(c, 'launches:write');
    // The body is optional; when sent it must be an empty object (the claim takes everything claimable).
    if ((await c.req.arrayBuffer()).byteLength > 0) {
      const body = await readJson(c);
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The body, when sent, must be an empty JSON object', { fields: [{ field: 'body', message: 'must be an object' }] });
      const fields = Object.keys(body).map((field) => ({ field, message: 'unknown field' }));
      if (fields.length > 0) throw invalidRequest('The claim takes no fields: it claims everything claimable to the launch\'s fee recipient', { fields });
    }
    const key = c.req.header('idempotency-key');
    if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw invalidRequest('Idempotency-Key must be 1 to 255 printable characters', { fields: [{ field: 'Idempotency-Key', message: 'invalid' }] });
    }
    const outcome = await deps.fees.claim(auth.owner, c.req.param('id'), { idempotencyKey: key });
    if (outcome.replayed) c.header('Idempotent-Replayed', 'true');
    return c.json({ claim: outcome.claim });
  });

  return app;
}
