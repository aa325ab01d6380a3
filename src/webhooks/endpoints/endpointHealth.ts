import type { Db, DbOrTx } from '../../db/database.js';
import { execSql, placeholders } from '../../db/sqlText.js';
import { DISABLED_FAILING, DISABLED_GONE } from './endpoints.js';
import { disableEndpoint } from './store.js';

export interface EndpointFailureInput {
  endpointId: string;
  /** The failed attempt's HTTP status (null when none came back). */
  statusCode: number | null;
  now: number;
  /** ENDPOINT_DISABLE_AFTER: failing continuously this long disables the endpoint. */
  disableAfterMs: number;
}

/**
 * Endpoint health after a failed attempt (docs/webhooks.md): a 410 answer disables the endpoint at once; a
 * failure starts (or continues) its failing run and disables it once the run lasts
 * `disableAfterMs`. Returns the reason when this attempt disabled it. A success ends the run in the
 * transaction that settles it ({@link endFailingRuns}).
 */
export async function noteEndpointFailure(db: Db, input: EndpointFailureInput): Promise<string | undefined> {
  const { endpointId, now } = input;
  const disable = (reason: string) => db.transaction().execute(async (trx) => ((await disableEndpoint(trx, endpointId, reason, now)) ? reason : undefined));
  if (input.statusCode === 410) return disable(DISABLED_GONE);
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

const endTexts: string[] = [];

/**
 * Ends the failing runs of endpoints that just took a delivery (docs/webhooks.md: a success resets the run).
 * Runs inside the dispatcher's settling transaction, one statement for the turn's endpoints, and
 * writes nothing for an endpoint that was not failing (the usual case).
 */
export async function endFailingRuns(db: DbOrTx, endpointIds: readonly string[]): Promise<void> {
  if (endpointIds.length === 0) return;
  let text = endTexts[endpointIds.length];
  if (text === undefined) {
    text = `update webhook_endpoints set failing_since = null where failing_since is not null and id in (${placeholders(endpointIds.length)})`;
    endTexts[endpointIds.length] = text;
  }
  await execSql(db, text, endpointIds);
}
