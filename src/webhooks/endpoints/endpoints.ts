import { generateSecret } from '../../../packages/webhooks/src/index.js';
import type { SecretBox } from '../../crypto/secretBox.js';
import type { Db } from '../../db/database.js';
import type { WebhookEndpointRow } from '../../db/schema.js';
import type { Clock } from '../../lib/clock.js';
import { ownerBound } from '../../bounds/ownerBounds.js';
import { DEFAULT_OWNER_LIMITS } from '../../config/config.js';
import { lockBound } from '../../db/dialect.js';
import { LimitReachedError, NotFoundError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { endpointHost, endpointKey } from '../endpointKey.js';
import type { EndpointCreateInput, EndpointPatchInput } from './request.js';
import { disableEndpoint, enableEndpoint, findEndpoint } from './store.js';

export interface EndpointDeps {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  /** MAX_ENDPOINTS_PER_OWNER (default {@link DEFAULT_OWNER_LIMITS}); an owner's override replaces it. */
  maxEndpoints?: number;
}

/** Why an endpoint was disabled, as shown in `disabledReason`. */
export const DISABLED_BY_OWNER = 'disabled_by_owner';
export const DISABLED_GONE = 'endpoint_answered_410';
export const DISABLED_FAILING = 'failing_continuously';

const notFound = (id: string) => new NotFoundError(`Webhook endpoint ${id} not found`);

/**
 * Creates an endpoint with a fresh secret; the plaintext secret is returned here and never again.
 * An owner holding its bound already (its override, else `maxEndpoints`) is refused
 * ({@link LimitReachedError}), nothing created.
 */
export async function createEndpoint(deps: EndpointDeps, owner: string, input: EndpointCreateInput): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const secret = generateSecret(32);
  const now = deps.clock.now();
  const row: WebhookEndpointRow = {
    id: newId('we'),
    owner,
    url: input.url,
    description: input.description,
    events: JSON.stringify(input.events),
    signature_scheme: input.signatureScheme,
    secret_enc: deps.secretBox.seal(secret),
    previous_secret_enc: null,
    previous_secret_expires_at: null,
    disabled_at: null,
    disabled_reason: null,
    failing_since: null,
    rate_limit_per_second: input.rateLimitPerSecond ?? null,
    rate_next_at: null,
    ordering: input.ordering ?? null,
    created_at: now,
    updated_at: now,
  };
  await deps.db.transaction().execute(async (trx) => {
    await lockBound(trx, `endpoints:${owner}`);
    const max = await ownerBound(trx, owner, 'endpoints', deps.maxEndpoints ?? DEFAULT_OWNER_LIMITS.endpoints);
    const { n } = await trx.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('owner', '=', owner).executeTakeFirstOrThrow();
    if (Number(n) >= max) {
      throw new LimitReachedError(`This owner already has ${max} webhook endpoints, the most allowed; delete one first`, 'MAX_ENDPOINTS_PER_OWNER', max);
    }
    await trx.insertInto('webhook_endpoints').values(row).execute();
  });
  return { endpoint: row, secret };
}

/**
 * Updates url, events, description, disabled, rateLimitPerSecond, ordering. A new URL applies to the endpoint's pending deliveries
 * too (due at once); disabling pauses them, enabling resumes them.
 */
export async function updateEndpoint(deps: EndpointDeps, id: string, owner: string | undefined, patch: EndpointPatchInput): Promise<WebhookEndpointRow> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const current = await findEndpoint(trx, id, owner);
    if (!current) throw notFound(id);
    const set: Partial<WebhookEndpointRow> = { updated_at: now };
    if (patch.url !== undefined) set.url = patch.url;
    if (patch.events !== undefined) set.events = JSON.stringify(patch.events);
    if (patch.description !== undefined) set.description = patch.description;
    if (patch.rateLimitPerSecond !== undefined) set.rate_limit_per_second = patch.rateLimitPerSecond;
    if (patch.ordering !== undefined) set.ordering = patch.ordering;
    await trx.updateTable('webhook_endpoints').set(set).where('id', '=', id).execute();
    if (patch.url !== undefined && patch.url !== current.url) {
      await trx
        .updateTable('deliveries')
        .set({ url: patch.url, host: endpointHost(patch.url), endpoint: endpointKey(patch.url), next_attempt_at: now, updated_at: now })
        .where('endpoint_id', '=', id)
        .where('status', 'in', ['pending', 'paused'])
        .execute();
    }
    if (patch.disabled === true) await disableEndpoint(trx, id, DISABLED_BY_OWNER, now);
    if (patch.disabled === false) await enableEndpoint(trx, id, now);
    return (await findEndpoint(trx, id, undefined))!;
  });
}

/**
 * Deletes an endpoint; its deliveries that were not yet made are canceled (history stays), and its
 * breaker goes with it unless deliveries of another owner or launch to the same endpoint are pending.
 */
export async function deleteEndpoint(deps: EndpointDeps, id: string, owner: string | undefined): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const current = await findEndpoint(trx, id, owner);
    if (!current) throw notFound(id);
    await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
    await trx
      .updateTable('deliveries')
      .set({ status: 'canceled', last_error: 'endpoint deleted', completed_at: now, updated_at: now })
      .where('endpoint_id', '=', id)
      .where('status', 'in', ['pending', 'paused'])
      .execute();
    const key = endpointKey(current.url);
    const pending = await trx
      .selectFrom('deliveries')
      .select('id')
      .where('status', 'in', ['pending', 'paused'])
      .where('host', '=', endpointHost(current.url))
      .where('endpoint', '=', key)
      .limit(1)
      .executeTakeFirst();
    if (!pending) await trx.deleteFrom('endpoint_breakers').where('endpoint', '=', key).execute();
  });
}

/**
 * Rotates the secret: a new one signs from now on; the current one stays valid (every attempt
 * carries both signatures) for `expiresInSeconds`. A rotation during an overlap drops the oldest.
 */
export async function rotateEndpointSecret(deps: EndpointDeps, id: string, owner: string | undefined, expiresInSeconds: number): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const now = deps.clock.now();
  const secret = generateSecret(32);
  return deps.db.transaction().execute(async (trx) => {
    const current = await findEndpoint(trx, id, owner);
    if (!current) throw notFound(id);
    const overlap = expiresInSeconds > 0;
    await trx
      .updateTable('webhook_endpoints')
      .set({
        secret_enc: deps.secretBox.seal(secret),
        previous_secret_enc: overlap ? current.secret_enc : null,
        previous_secret_expires_at: overlap ? now + expiresInSeconds * 1000 : null,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
    return { endpoint: (await findEndpoint(trx, id, undefined))!, secret };
  });
}
