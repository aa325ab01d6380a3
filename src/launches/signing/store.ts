import type { Db, DbOrTx } from '../../db/database.js';
import type { SigningRow, SigningTxRow } from '../../db/schema.js';

/** A transaction row to insert: message base64, signers and derived keys' signatures as JSON. */
export interface NewSigningTx {
  idx: number;
  step: string;
  label: string;
  message: Buffer;
  signers: string[];
  serviceSignatures: Record<string, string>;
  nonceAccount?: string | undefined;
  nonce?: string | undefined;
  lastValidBlockHeight?: number | undefined;
}

/** Inserts a creator-signed launch's signing state with its setup transactions. */
export async function insertSigning(trx: DbOrTx, args: { launchId: string; creator: string; nonceSeed: string; nonceCount: number; deadlineAt: number; now: number; setups: NewSigningTx[] }): Promise<void> {
  await trx
    .insertInto('launch_signing')
    .values({ launch_id: args.launchId, creator: args.creator, phase: 'setup', nonce_seed: args.nonceSeed, nonce_count: args.nonceCount, deadline_at: args.deadlineAt, created_at: args.now, updated_at: args.now })
    .execute();
  await insertSigningTxs(trx, args.launchId, args.setups, args.now);
}

export async function insertSigningTxs(trx: DbOrTx, launchId: string, txs: NewSigningTx[], now: number): Promise<void> {
  if (txs.length === 0) return;
  await trx
    .insertInto('launch_signing_txs')
    .values(
      txs.map((tx) => ({
        launch_id: launchId,
        idx: tx.idx,
        step: tx.step,
        label: tx.label,
        message: tx.message.toString('base64'),
        signers: JSON.stringify(tx.signers),
        service_signatures: JSON.stringify(tx.serviceSignatures),
        signature: null,
        nonce_account: tx.nonceAccount ?? null,
        nonce: tx.nonce ?? null,
        last_valid_block_height: tx.lastValidBlockHeight ?? null,
        created_at: now,
        signed_at: null,
      })),
    )
    .execute();
}

export function findSigning(db: DbOrTx, launchId: string): Promise<SigningRow | undefined> {
  return db.selectFrom('launch_signing').selectAll().where('launch_id', '=', launchId).executeTakeFirst();
}

export function findSigningTxs(db: DbOrTx, launchId: string): Promise<SigningTxRow[]> {
  return db.selectFrom('launch_signing_txs').selectAll().where('launch_id', '=', launchId).orderBy('idx', 'asc').execute();
}

/** Moves the signing phase on, only from `from`: true when this call moved it (another instance may have). */
export async function movePhase(trx: DbOrTx, launchId: string, from: SigningRow['phase'], to: SigningRow['phase'], now: number): Promise<boolean> {
  const r = await trx.updateTable('launch_signing').set({ phase: to, updated_at: now }).where('launch_id', '=', launchId).where('phase', '=', from).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Stores a verified signature on the message it was verified against (a re-offered setup has another message). */
export async function storeSignature(trx: DbOrTx, args: { launchId: string; idx: number; message: string; signature: string; now: number }): Promise<boolean> {
  const r = await trx
    .updateTable('launch_signing_txs')
    .set({ signature: args.signature, signed_at: args.now })
    .where('launch_id', '=', args.launchId)
    .where('idx', '=', args.idx)
    .where('message', '=', args.message)
    .where('signature', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Offers fresh setups in place of those that expired or failed unlanded (their signatures gone
 * with them), only if those are still exactly as read: another request may have replaced them.
 */
export async function replaceSetups(db: Db, args: { launchId: string; old: Array<{ idx: number; message: string }>; fresh: NewSigningTx[]; now: number }): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    for (const { idx, message } of args.old) {
      const r = await trx.deleteFrom('launch_signing_txs').where('launch_id', '=', args.launchId).where('idx', '=', idx).where('message', '=', message).executeTakeFirst();
      if (Number(r.numDeletedRows) !== 1) throw new SetupsMoved();
    }
    await insertSigningTxs(trx, args.launchId, args.fresh, args.now);
    return true;
  }).catch((error: unknown) => {
    if (error instanceof SetupsMoved) return false;
    throw error;
  });
}

class SetupsMoved extends Error {}

/** Whether any launch is in its setup round (the signing loop reads the chain only then). */
export async function hasSetupRound(db: DbOrTx): Promise<boolean> {
  return (await db.selectFrom('launch_signing').select('launch_id').where('phase', '=', 'setup').limit(1).executeTakeFirst()) !== undefined;
}

/**
 * Launches waiting in their setup round with something to do, oldest first (the signing loop's
 * work): a signed setup (to send, or to see landed), or an unsigned one whose blockhash expired
 * below `height` (to be offered fresh). Unsigned setups still valid wait for the creator.
 */
export function findSetupsToAdvance(db: DbOrTx, args: { height: number; limit: number }): Promise<Array<{ launch_id: string }>> {
  return db
    .selectFrom('launch_signing as s')
    .innerJoin('launch_signing_txs as t', (join) => join.onRef('t.launch_id', '=', 's.launch_id').on('t.step', '=', 'setup'))
    .innerJoin('launches as l', 'l.id', 's.launch_id')
    .select(['s.launch_id', 's.created_at'])
    .distinct()
    .where('s.phase', '=', 'setup')
    .where('l.status', '=', 'awaiting_signatures')
    .where((eb) => eb.or([eb('t.signature', 'is not', null), eb('t.last_valid_block_height', '<', args.height)]))
    .orderBy('s.created_at', 'asc')
    .limit(args.limit)
    .execute();
}
