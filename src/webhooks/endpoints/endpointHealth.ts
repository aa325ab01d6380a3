import type { Db } from '../../db/database.js';
import type { AttemptOutcome } from '../httpClient.js';
import { DISABLED_FAILING, DISABLED_GONE } from './endpoints.js';
import { disableEndpoint } from './store.js';

export interface EndpointOutcomeInput {
  endpointId: string;
  outcome: Pick<AttemptOutcome, 'ok' | 'statusCode'>;
  now: number;
  /** ENDPOINT_DISABLE_AFTER: failing continuously this long disables the endpoint. */
  disableAfterMs: number;
}

/**
 * Endpoint health after one attempt (SPEC §13): a 410 answer disables the endpoint at once; a
 * failure starts (or continues) its failing run and disables it once the run lasts
 * `disableAfterMs`; a success ends the run. Returns the reason when this attempt disabled it.
 */
export async function noteEndpointOutcome(db: Db, input: EndpointOutcomeInput): Promise<string | undefined> {
  const { endpointId, outcome, now } = input;
  if (outcome.ok) {
    await db.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', endpointId).where('failing_since', 'is not', null).execute();
    return undefined;
  }
  const disable = (reason: string) => db.transaction().execute(async (trx) => ((await disableEndpoint(trx, endpointId, reason, now)) ? reason : undefined));
  if (outcome.statusCode === 410) return disable(DISABLED_GONE);
  const row = await db
    .updateTable('webhook_endpoints')
    .set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', eb.val(now)) }))
    .where('id', '=', endpointId)
    .where('disabled_at', 'is', null)
    .returning('failing_since')
    .executeTakeFirst();
  if (row?.failing_since == null || now - Number(row.failing_since) < input.disableAfterMs) return undefined;
  return disable(DISABLED_FAILING);
}
