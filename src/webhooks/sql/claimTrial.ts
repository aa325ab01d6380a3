import type { DbOrTx } from '../../db/database.js';
import type { DeliveryRow } from '../../db/schema.js';
import { isPostgres } from '../../db/dialect.js';
import { execSql } from '../../db/sqlText.js';
import { hostOfEndpoint } from '../endpointKey.js';
import type { ClaimArgs, SendAllowance } from './claimArgs.js';
import { dueParams, dueText, freeSlots, LEASE_BY_ID_SQLITE, LEASE_NOW_PG, text } from './claimDue.js';
import { laneHost } from './shareSlots.js';
import { takeSlotOf, throttleOpenCondition } from './throttle.js';

/**
 * A half-open trial: one of the endpoint's due deliveries, whoever's, within its host's lease room,
 * the least recently touched first, so one delivery that keeps failing cannot be every trial while
 * the others wait; the owner's send allowance at the endpoint goes to `allowances`. Run in a write
 * transaction (PostgreSQL: under the exclusive claim lock).
 */
export async function claimTrial(db: DbOrTx, args: ClaimArgs, endpoint: string, allowances?: SendAllowance[]): Promise<DeliveryRow[]> {
  const pg = isPostgres(db);
  const slots = await freeSlots(db, args);
  const host = laneHost(endpoint, hostOfEndpoint);
  allowances?.push(slots.allowance(host, endpoint));
  if (slots.hostFree(host) <= 0) return [];
  const running = args.running?.length ?? 0;
  // A throttled webhook endpoint's delivery is a trial only once its send slot has come, and takes
  // the slot (sql/throttle.ts): a trial is a send like any other, so it counts against the rate.
  const select = `select y.id from deliveries y
      where y.endpoint = ? and ${dueText(pg, running)}
        and ${throttleOpenCondition(pg)}
      order by y.updated_at, y.next_attempt_at
      limit 1`;
  let out: DeliveryRow[];
  if (pg) {
    const t = text(`pg:trial:${running}`, () => `update deliveries ${SET_LEASE_PG} where id in (${select} for update of y skip locked) returning *`);
    out = (await execSql<DeliveryRow>(db, t, [args.owner, args.leaseMs, args.now, endpoint, ...dueParams(true, args)])).rows;
    for (const row of out) await execSql(db, NOTE_LEASE_PG, [row.id, row.host, row.endpoint, row.lease_owner, row.lease_token]);
  } else {
    const t = text(`sqlite:trial:${running}`, () => select);
    const { rows: ids } = await execSql<{ id: string }>(db, t, [endpoint, ...dueParams(false, args), args.now]);
    out = [];
    for (const { id } of ids) out.push(...(await execSql<DeliveryRow>(db, LEASE_BY_ID_SQLITE, [args.owner, args.now + args.leaseMs, args.now, id])).rows);
  }
  for (const row of out) if (row.endpoint_id !== null) await takeSlotOf(db, args.now, row.endpoint_id);
  return out;
}

const SET_LEASE_PG = `set lease_owner = ?, lease_expires_at = ${LEASE_NOW_PG} + ?, attempt_count = attempt_count + 1,
      lease_token = lease_token + 1, updated_at = ?`;

/** PostgreSQL: a lease taken outside the claim function (the half-open trial) is noted in the lease table too. */
const NOTE_LEASE_PG = `insert into delivery_leases (delivery_id, host, endpoint, lease_owner, lease_token) values (?, ?, ?, ?, ?)
    on conflict (delivery_id) do update set host = excluded.host, endpoint = excluded.endpoint, lease_owner = excluded.lease_owner, lease_token = excluded.lease_token`;
