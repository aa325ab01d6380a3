import { sql, type Insertable } from 'kysely';
import { compiledQuery } from '../db/compiledQuery.js';
import type { DbOrTx } from '../db/database.js';
import type { FundingEntryKind, FundingEntryRow, FundingLedgerTable } from '../db/schema.js';
import { newSortableId } from '../lib/ids.js';

/** One new ledger entry; entries are never changed or deleted. */
export interface NewEntry {
  owner: string;
  launchId?: string | null;
  kind: FundingEntryKind;
  lamports: number | bigint;
  signature?: string | null;
  idempotencyKey?: string | null;
  requestHash?: string | null;
  details?: unknown;
  /** A withdrawal's fee, paid besides `lamports`. */
  feeLamports?: number | bigint | null;
  /** The entry's id when the caller chose it first (a withdrawal's id goes on chain in its memo). */
  id?: string;
  now: number;
}

/**
 * Writes one entry. One entry per transaction of an owner: a second entry for a signature the
 * owner's ledger already holds is refused by the unique index (migration 042) and throws.
 */
export async function insertEntry(db: DbOrTx, entry: NewEntry): Promise<string> {
  const id = entry.id ?? newSortableId('fle', entry.now);
  await insertStatement.execute(db, {
    id,
    owner: entry.owner,
    launch_id: entry.launchId ?? null,
    kind: entry.kind,
    lamports: entry.lamports,
    signature: entry.signature ?? null,
    idempotency_key: entry.idempotencyKey ?? null,
    request_hash: entry.requestHash ?? null,
    details: entry.details === undefined ? null : JSON.stringify(entry.details),
    fee_lamports: entry.feeLamports ?? null,
    created_at: entry.now,
  });
  return id;
}

/**
 * Writes a launch's `spend` entry for `signature` unless the launch has recorded one for it already
 * (a step run again after a crash reports the same transactions): one statement, its check on the
 * launch's index (launch_id, kind), in place of a read of the launch's spends and an insert. Its
 * trigger adds it to the launch's open reservation (migration 049). True when it wrote the entry.
 */
export async function insertSpendOnce(db: DbOrTx, spend: { owner: string; launchId: string; lamports: bigint; signature: string; now: number }): Promise<boolean> {
  const written = await insertSpendOnceStatement.changed(db, {
    id: newSortableId('fle', spend.now),
    owner: spend.owner,
    launchId: spend.launchId,
    lamports: spend.lamports,
    signature: spend.signature,
    createdAt: spend.now,
  });
  return written > 0;
}
// PostgreSQL types a bare `select $1` as text: each value is cast to its column's type.
const insertSpendOnceStatement = compiledQuery<{ id: string; owner: string; launchId: string; lamports: bigint; signature: string; createdAt: number }>((db, p) =>
  db
    .insertInto('funding_ledger')
    .columns(['id', 'owner', 'launch_id', 'kind', 'lamports', 'signature', 'created_at'])
    .expression(
      db
        .selectNoFrom([
          sql<string>`cast(${p.id} as text)`.as('id'),
          sql<string>`cast(${p.owner} as text)`.as('owner'),
          sql<string>`cast(${p.launchId} as text)`.as('launch_id'),
          sql<string>`'spend'`.as('kind'),
          sql<bigint>`cast(${p.lamports} as bigint)`.as('lamports'),
          sql<string>`cast(${p.signature} as text)`.as('signature'),
          sql<number>`cast(${p.createdAt} as bigint)`.as('created_at'),
        ])
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('funding_ledger as s')
                .select(sql`1`.as('one'))
                .where('s.launch_id', '=', p.launchId)
                .where('s.kind', '=', 'spend')
                .where('s.signature', '=', p.signature),
            ),
          ),
        ),
    ),
);

// The ledger's statements of every launch step, compiled once (compiledQuery.ts): a launch writes
// four entries and reads its reservation on every step.
const insertStatement = compiledQuery<Insertable<FundingLedgerTable>>((db, p) =>
  db.insertInto('funding_ledger').values({
    id: p.id,
    owner: p.owner,
    launch_id: p.launch_id,
    kind: p.kind,
    lamports: p.lamports,
    signature: p.signature,
    idempotency_key: p.idempotency_key,
    request_hash: p.request_hash,
    details: p.details,
    fee_lamports: p.fee_lamports,
    created_at: p.created_at,
  }),
);
const reservationStatement = compiledQuery<{ launchId: string }, { kind: FundingEntryKind; lamports: string }>((db, p) =>
  db
    .selectFrom('funding_ledger')
    .select(['kind', sql<string>`cast(sum(lamports) as text)`.as('lamports')])
    .where('launch_id', '=', p.launchId)
    .groupBy('kind'),
);

const num = (v: unknown): number => Number(v ?? 0);
/** A sum read as decimal text (`cast(… as text)`), exact at any size: a JS number rounds from 2^53 on. */
const exact = (v: unknown): bigint => BigInt((v as string | null | undefined) ?? 0);

/**
 * What the owner's open reservations still hold, exact: for each launch reserved and not yet
 * released, its reservation less what it has spent (never below zero). Spends recorded at or after
 * `spendsBefore` are not subtracted: their transactions may have landed after the caller read the
 * balance it compares this with, so counting them would count the same lamports as gone twice.
 * Reads only the owner's open reservations (`funding_open_reservations`, kept from the ledger by
 * triggers, migration 049), and the ledger only for those with a spend since `spendsBefore`.
 */
export async function reservedLamports(db: DbOrTx, owner: string, options: { spendsBefore?: number } = {}): Promise<bigint> {
  const before = options.spendsBefore;
  const recent =
    before === undefined
      ? sql`0`
      : sql`case when r.last_spend_at >= ${before} then coalesce((
          select sum(l.lamports) from funding_ledger l
          where l.launch_id = r.launch_id and l.kind = 'spend' and l.owner = r.owner and l.created_at >= ${before}), 0) else 0 end`;
  const row = await sql<{ held: string | null }>`
    select cast(coalesce(sum(case when h.open_amount > 0 then h.open_amount else 0 end), 0) as text) as held from (
      select r.reserved_lamports - r.spent_lamports + ${recent} as open_amount
      from funding_open_reservations r
      where r.owner = ${owner}
    ) h`.execute(db);
  return exact(row.rows[0]?.held);
}

/** One launch's reservation: reserved, spent so far, and whether it is still open. */
export async function launchReservation(db: DbOrTx, launchId: string): Promise<{ reserved: bigint; spent: bigint; open: boolean } | undefined> {
  const rows = await reservationStatement.rows(db, { launchId });
  const by = new Map(rows.map((r) => [r.kind, exact(r.lamports)]));
  const reserved = by.get('reserve');
  if (reserved === undefined) return undefined;
  return { reserved, spent: by.get('spend') ?? 0n, open: !by.has('release') };
}

/**
 * Closes the launch's reservation, once: a `release` entry with what it did not spend (`"0"` when it
 * spent it all). Nothing when the launch reserved nothing (created before funding) or is closed.
 * Reads the launch's row of `funding_open_reservations` (one primary-key read): the ledger's index
 * of open reservations, kept in each entry's transaction (migration 049), holds the owner, what was
 * reserved and what the spends add up to; the `release` entry's trigger deletes the row.
 */
export async function closeReservation(db: DbOrTx, args: { launchId: string; now: number }): Promise<bigint | undefined> {
  const open = await openReservationStatement.first(db, { launchId: args.launchId });
  if (!open) return undefined;
  const left = BigInt(open.left);
  const lamports = left > 0n ? left : 0n;
  await insertEntry(db, { owner: open.owner, launchId: args.launchId, kind: 'release', lamports, now: args.now });
  return lamports;
}
const openReservationStatement = compiledQuery<{ launchId: string }, { owner: string; left: string }>((db, p) =>
  db
    .selectFrom('funding_open_reservations')
    .select(['owner', sql<string>`cast(reserved_lamports - spent_lamports as text)`.as('left')])
    .where('launch_id', '=', p.launchId),
);

/**
 * Today's use of the owner's funds and how many launches reserved today: what the launches reserved
 * since `dayStart` hold or spent, plus every spend since `dayStart` that no open reservation held
 * (docs/funding.md, "Limits"): a creator-signed curve's graduation (its launch reserved nothing) and a
 * fee claim after its launch's release. A spend written in the same instant as its launch's release
 * (a curve's graduation commit writes its spends, then the release) was held by that reservation.
 */
export async function dayUsage(db: DbOrTx, owner: string, dayStart: number): Promise<{ lamports: bigint; launches: number }> {
  const row = await sql<{ lamports: string | null; launches: unknown; unreserved: string | null }>`
    select cast(coalesce(sum(case when l.kind = 'reserve' then l.lamports when l.kind = 'release' then -l.lamports else 0 end), 0) as text) as lamports,
           coalesce(sum(case when l.kind = 'reserve' then 1 else 0 end), 0) as launches,
           (select cast(coalesce(sum(s.lamports), 0) as text) from funding_ledger s
             where s.owner = ${owner} and s.created_at >= ${dayStart} and s.kind = 'spend' and (
               s.launch_id is null
               or not exists (select 1 from funding_ledger r where r.launch_id = s.launch_id and r.kind = 'reserve' and r.owner = s.owner)
               or exists (select 1 from funding_ledger x where x.launch_id = s.launch_id and x.kind = 'release' and x.owner = s.owner and x.created_at < s.created_at)
             )) as unreserved
    from funding_ledger l
    where l.owner = ${owner} and l.kind in ('reserve', 'release') and l.launch_id in (
      select r.launch_id from funding_ledger r where r.owner = ${owner} and r.kind = 'reserve' and r.created_at >= ${dayStart}
    )`.execute(db);
  return { lamports: exact(row.rows[0]?.lamports) + exact(row.rows[0]?.unreserved), launches: num(row.rows[0]?.launches) };
}

/** A ledger entry as read for display: its amounts exact, as decimal text (a JS number rounds from 2^53 on). */
export type LedgerEntry = Omit<FundingEntryRow, 'lamports' | 'fee_lamports'> & { lamports: string; fee_lamports: string | null };

/** A page of the owner's ledger, newest first, with the total. */
export async function listEntries(db: DbOrTx, owner: string, page: { limit: number; offset: number }): Promise<{ rows: LedgerEntry[]; total: number }> {
  const base = db.selectFrom('funding_ledger').where('owner', '=', owner);
  const [rows, count] = await Promise.all([
    base
      .select(['id', 'owner', 'launch_id', 'kind', 'signature', 'idempotency_key', 'request_hash', 'details', 'created_at'])
      .select([sql<string>`cast(lamports as text)`.as('lamports'), sql<string | null>`cast(fee_lamports as text)`.as('fee_lamports')])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: num(count.n) };
}

/** An entry as the API shows it (docs/api.md, "Funding"): amounts as decimal strings. */
export function presentEntry(row: LedgerEntry | FundingEntryRow): Record<string, unknown> {
  return {
    id: row.id,
    launchId: row.launch_id,
    kind: row.kind,
    lamports: String(row.lamports),
    feeLamports: row.fee_lamports === null ? null : String(row.fee_lamports),
    signature: row.signature,
    at: new Date(Number(row.created_at)).toISOString(),
  };
}

/** The ledger entry a withdrawal with this Idempotency-Key wrote, if any. */
export async function withdrawalByKey(db: DbOrTx, owner: string, key: string): Promise<FundingEntryRow | undefined> {
  return db.selectFrom('funding_ledger').selectAll().where('owner', '=', owner).where('idempotency_key', '=', key).executeTakeFirst();
}
