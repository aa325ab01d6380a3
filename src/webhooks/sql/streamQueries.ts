import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { ownerStreamKey } from '../outbox.js';

/** One event of an owner's stream, with its place in the outbox (`rowid`, insertion order). */
export interface StreamEventRow {
  rowid: number;
  id: string;
  event: string;
  body: string;
}

/** The highest `rowid` of the outbox (0 when it is empty). */
export async function lastOutboxRowid(db: Db): Promise<number> {
  const { rows } = await sql<{ hi: number | string | null }>`select max(rowid) as hi from outbox_events`.execute(db);
  return Number(rows[0]?.hi ?? 0);
}

/** The `rowid` of event `id` when it is one of `owner`'s events (of its launches, or its own); undefined otherwise. */
export async function ownerEventRowid(db: Db, owner: string, id: string): Promise<number | undefined> {
  const { rows } = await sql<{ rowid: number | string }>`
    select e.rowid as rowid from outbox_events e left join launches l on l.id = e.launch_id
    where e.id = ${id} and (l.owner = ${owner} or e.launch_id = ${ownerStreamKey(owner)})`.execute(db);
  return rows[0] === undefined ? undefined : Number(rows[0].rowid);
}

/** Up to `limit` of `owner`'s events (of its launches, and its own: the funding events) with a rowid in (`after`, `upTo`], in rowid order. */
export async function ownerEventsBetween(db: Db, owner: string, after: number, upTo: number, limit: number): Promise<StreamEventRow[]> {
  const { rows } = await sql<StreamEventRow>`
    select e.rowid as rowid, e.id as id, e.event as event, e.body as body
    from outbox_events e left join launches l on l.id = e.launch_id
    where e.rowid > ${after} and e.rowid <= ${upTo} and (l.owner = ${owner} or e.launch_id = ${ownerStreamKey(owner)})
    order by e.rowid limit ${limit}`.execute(db);
  return rows.map((r) => ({ ...r, rowid: Number(r.rowid) }));
}

/** How many events have a rowid in (`after`, `upTo`] (every owner's). */
export async function countOutboxBetween(db: Db, after: number, upTo: number): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from outbox_events where rowid > ${after} and rowid <= ${upTo}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** The first `limit` rowids above `after` (every owner's), in order. */
export async function outboxRowidsAfter(db: Db, after: number, limit: number): Promise<number[]> {
  const { rows } = await sql<{ rowid: number | string }>`select rowid from outbox_events where rowid > ${after} order by rowid limit ${limit}`.execute(db);
  return rows.map((r) => Number(r.rowid));
}

/** The id of `owner`'s last event at or below rowid `upTo`, if it has one. */
export async function ownerLastEventId(db: Db, owner: string, upTo: number): Promise<string | undefined> {
  const { rows } = await sql<{ id: string }>`
    select e.id as id from outbox_events e join launches l on l.id = e.launch_id
    where l.owner = ${owner} and e.rowid <= ${upTo} order by e.rowid desc limit 1`.execute(db);
  return rows[0]?.id;
}
