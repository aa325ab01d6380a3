import type { DbOrTx, Db } from '../db/database.js';
import type { PendingTx } from '../chain/steps/types.js';
import { leaseDeadline, leaseNow } from '../db/dialect.js';
import { parseJson } from '../lib/json.js';

/**
 * The durable record of a creator-fee claim (docs/funding.md, "Creator fees"; migration 046): made
 * before anything is sent with what it will claim, each signed transaction recorded before it is
 * sent, `done` in the commit that records `fees.claimed` and the ledger's spend.
 */
export type FeeClaimRow = {
  id: string;
  launch_id: string;
  owner: string;
  idempotency_key: string | null;
  origin: 'api' | 'auto';
  state: 'running' | 'done' | 'failed';
  recipient: string;
  plan: string;
  pending: string | null;
  signatures: string | null;
  amounts: string | null;
  last_error: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  fence: number;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
};

/** One source of a claim, fixed before the first send: what it claims and where it pays. */
export interface PlannedSource {
  kind: 'curve' | 'amm-position';
  /** The curve, or the DAMM v2 position. */
  address: string;
  /** Lamports of SOL (the quote) the claim takes and pays on (a position's: what it held when planned; its claim pays what it holds when it lands). */
  quoteLamports: string;
  /** Base units of the launched token (0 on our curves, which collect fees in SOL). */
  baseAmount: string;
  baseMint: string;
  /** A position's DAMM v2 pool and the token account holding its NFT. */
  pool?: string;
  nftAccount?: string;
}

type Tables = { fee_claims: FeeClaimRow; curve_migrations: { launch_id: string; result: string | null } };
const tables = (db: DbOrTx) => (db as Db).withTables<Tables>();

/** Thrown when the claim's lease was taken over: nothing was written. */
export class ClaimFencedError extends Error {
  constructor(id: string) {
    super(`fee claim ${id} was taken over by another request; nothing written`);
    this.name = 'ClaimFencedError';
  }
}

export const planOf = (row: FeeClaimRow): PlannedSource[] => parseJson<PlannedSource[]>(row.plan, []);
export const pendingOf = (row: FeeClaimRow): Record<string, PendingTx> => (row.pending ? parseJson<Record<string, PendingTx>>(row.pending, {}) : {});

export async function findClaimByKey(db: DbOrTx, owner: string, key: string): Promise<FeeClaimRow | undefined> {
  return tables(db).selectFrom('fee_claims').selectAll().where('owner', '=', owner).where('idempotency_key', '=', key).executeTakeFirst();
}

export async function findRunningClaim(db: DbOrTx, launchId: string): Promise<FeeClaimRow | undefined> {
  return tables(db).selectFrom('fee_claims').selectAll().where('launch_id', '=', launchId).where('state', '=', 'running').executeTakeFirst();
}

/** Inserts a claim; `running` ones hold the launch's one running slot (a second insert throws on the unique index). */
export async function insertClaim(db: DbOrTx, row: FeeClaimRow): Promise<void> {
  await tables(db).insertInto('fee_claims').values(row).execute();
}

/** Takes over a running claim whose lease expired (its process died or its request gave up): bumps the fence. */
export async function takeOverClaim(db: DbOrTx, row: FeeClaimRow, args: { owner: string; now: number; leaseMs: number }): Promise<FeeClaimRow | undefined> {
  return tables(db)
    .updateTable('fee_claims')
    .set((eb) => ({ lease_owner: args.owner, lease_expires_at: leaseDeadline(db, args.now, args.leaseMs), fence: eb('fence', '+', 1), updated_at: args.now }))
    .where('id', '=', row.id)
    .where('state', '=', 'running')
    .where((w) => w.or([w('lease_owner', 'is', null), w('lease_expires_at', '<', leaseNow(db, args.now))]))
    .returningAll()
    .executeTakeFirst();
}

/** Records a signed transaction before it is sent, under the fence. */
export async function recordClaimPending(db: DbOrTx, row: FeeClaimRow, pending: Record<string, PendingTx>, now: number): Promise<void> {
  const updated = await tables(db).updateTable('fee_claims').set({ pending: JSON.stringify(pending), updated_at: now }).where('id', '=', row.id).where('fence', '=', row.fence).where('state', '=', 'running').executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) throw new ClaimFencedError(row.id);
}

/** The plan read from the chain while the claim holds the launch's running slot, before the first send, under the fence. */
export async function recordClaimPlan(db: DbOrTx, row: FeeClaimRow, plan: PlannedSource[], now: number): Promise<void> {
  const updated = await tables(db).updateTable('fee_claims').set({ plan: JSON.stringify(plan), updated_at: now }).where('id', '=', row.id).where('fence', '=', row.fence).where('state', '=', 'running').executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) throw new ClaimFencedError(row.id);
}

/** In the completing transaction, under the fence. */
export async function completeClaim(db: DbOrTx, row: FeeClaimRow, done: { signatures: string[]; amounts: Record<string, string>; now: number }): Promise<void> {
  const updated = await tables(db)
    .updateTable('fee_claims')
    .set({ state: 'done', signatures: JSON.stringify(done.signatures), amounts: JSON.stringify(done.amounts), lease_owner: null, lease_expires_at: null, last_error: null, completed_at: done.now, updated_at: done.now })
    .where('id', '=', row.id)
    .where('fence', '=', row.fence)
    .where('state', '=', 'running')
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) throw new ClaimFencedError(row.id);
}

/** A claim that failed with nothing of it on chain: frees the launch's slot and its Idempotency-Key. */
export async function failClaim(db: DbOrTx, row: FeeClaimRow, error: string, now: number): Promise<void> {
  await tables(db)
    .updateTable('fee_claims')
    .set({ state: 'failed', idempotency_key: null, last_error: error.slice(0, 1000), lease_owner: null, lease_expires_at: null, updated_at: now })
    .where('id', '=', row.id)
    .where('fence', '=', row.fence)
    .execute();
}

/** Gives a running claim back (the chain did not answer): the next claim request of the launch resumes it. */
export async function releaseClaim(db: DbOrTx, row: FeeClaimRow, error: string, now: number): Promise<void> {
  await tables(db).updateTable('fee_claims').set({ lease_owner: null, lease_expires_at: null, last_error: error.slice(0, 1000), updated_at: now }).where('id', '=', row.id).where('fence', '=', row.fence).execute();
}

/** The API view of a claim. */
export function presentClaim(row: FeeClaimRow): { signatures: string[]; amounts: Record<string, string> } {
  return { signatures: parseJson<string[]>(row.signatures ?? '[]', []), amounts: parseJson<Record<string, string>>(row.amounts ?? '{}', {}) };
}

/** The DAMM v2 positions a launch's graduation recorded (`pool.graduated`'s `positions`; none before it, or when someone else migrated the curve). */
export async function graduatedPositions(db: DbOrTx, launchId: string): Promise<Array<{ address: string; nftMint: string; nftAccount: string; owner: string }>> {
  const row = await tables(db).selectFrom('curve_migrations').select('result').where('launch_id', '=', launchId).executeTakeFirst();
  return row?.result ? (parseJson<{ positions?: Array<{ address: string; nftMint: string; nftAccount: string; owner: string }> }>(row.result, {}).positions ?? []) : [];
}
