import type { DbOrTx } from '../../db/database.js';
import { insertCurveMigration } from './store.js';

/** In the transaction that completes a launch: a bonding curve's graduation record (nothing for other launches); whether it made one. */
export async function insertCurveMigrationFor(trx: DbOrTx, launchId: string, results: Record<string, unknown>, now: number): Promise<boolean> {
  const pool = results.pool as { kind?: unknown; address?: unknown; graduationQuoteLamports?: unknown } | undefined;
  if (pool?.kind !== 'bonding-curve' || typeof pool.address !== 'string') return false;
  const launch = await trx.selectFrom('launches').select('owner').where('id', '=', launchId).executeTakeFirstOrThrow();
  await insertCurveMigration(trx, { launchId, owner: launch.owner, pool: pool.address, thresholdLamports: String(pool.graduationQuoteLamports ?? '0'), now });
  return true;
}
