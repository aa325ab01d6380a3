import type { SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import type { LaunchRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { InvalidInputError, NotFoundError } from '../lib/errors.js';
import { webhookUrlProblem } from '../webhooks/endpoints/request.js';
import { endpointHost, endpointKey } from '../webhooks/endpointKey.js';

export interface DestinationPatch {
  webhookUrl?: string;
  webhookSecret?: string;
}

/** `PATCH /launches/:id` body: `{webhookUrl?, webhookSecret?}` with the creation rules of each. */
export function parseDestinationPatch(raw: unknown, options: { requireHttps: boolean }): DestinationPatch {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('Request body must be a JSON object');
  const body = raw as Record<string, unknown>;
  const fields: Array<{ field: string; message: string }> = [];
  for (const key of Object.keys(body)) if (key !== 'webhookUrl' && key !== 'webhookSecret') fields.push({ field: key, message: 'is not a field that can be changed; only webhookUrl and webhookSecret' });
  if (body.webhookUrl !== undefined) {
    const problem = webhookUrlProblem(body.webhookUrl, options.requireHttps);
    if (problem) fields.push({ field: 'webhookUrl', message: problem });
  }
  if (body.webhookSecret !== undefined && (typeof body.webhookSecret !== 'string' || body.webhookSecret.length < 16 || body.webhookSecret.length > 256)) {
    fields.push({ field: 'webhookSecret', message: 'must be a string of 16 to 256 characters' });
  }
  if (fields.length === 0 && body.webhookUrl === undefined && body.webhookSecret === undefined) fields.push({ field: 'body', message: 'give webhookUrl, webhookSecret or both' });
  if (fields.length > 0) throw new InvalidInputError('The launch update is invalid', { fields });
  return { webhookUrl: body.webhookUrl as string | undefined, webhookSecret: body.webhookSecret as string | undefined };
}

/**
 * Fixes a launch's own webhook destination (docs/webhooks.md). Later events use it, and so do its pending
 * deliveries (made due at once: their backoff was against the old destination); a failed,
 * dead-lettered delivery retried afterwards goes to the new one too. Endpoint deliveries are untouched.
 */
export async function updateLaunchDestination(
  deps: { db: Db; clock: Clock; secretBox: SecretBox },
  launchId: string,
  owner: string | undefined,
  patch: DestinationPatch,
): Promise<LaunchRow> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    let q = trx.selectFrom('launches').select('id').where('id', '=', launchId);
    if (owner !== undefined) q = q.where('owner', '=', owner);
    if (!(await q.executeTakeFirst())) throw new NotFoundError(`Launch ${launchId} not found`);
    await trx
      .updateTable('launches')
      .set({
        updated_at: now,
        ...(patch.webhookUrl === undefined ? {} : { webhook_url: patch.webhookUrl }),
        ...(patch.webhookSecret === undefined ? {} : { webhook_secret_enc: deps.secretBox.seal(patch.webhookSecret) }),
      })
      .where('id', '=', launchId)
      .execute();
    await trx
      .updateTable('deliveries')
      .set({ next_attempt_at: now, updated_at: now, ...(patch.webhookUrl === undefined ? {} : { url: patch.webhookUrl, host: endpointHost(patch.webhookUrl), endpoint: endpointKey(patch.webhookUrl) }) })
      .where('launch_id', '=', launchId)
      .where('endpoint_id', 'is', null)
      .where('status', '=', 'pending')
      .execute();
    return trx.selectFrom('launches').selectAll().where('id', '=', launchId).executeTakeFirstOrThrow();
  });
}
