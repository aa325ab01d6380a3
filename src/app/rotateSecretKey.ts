import type { Logger } from 'pino';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import { resealWallets } from '../funding/wallets.js';

/** The opened value, or undefined when `box` cannot open it. */
function tryOpen(box: SecretBox, sealed: string): string | undefined {
  try {
    return box.open(sealed);
  } catch {
    return undefined;
  }
}

/**
 * After a SECRET_KEY rotation (SECRET_KEY_PREVIOUS set, docs/configuration.md): re-seals under the
 * current key everything sealed under the previous one — the owners' funding wallets (their
 * keypairs never change, so no deposit is stranded), the embedded chain's payer, launches' and
 * endpoints' webhook secrets. What the current key already opens is left alone, so running it
 * again (every start while SECRET_KEY_PREVIOUS stays set, or on several instances) changes nothing.
 */
export async function resealUnderCurrentKey(db: Db, current: SecretBox, previous: SecretBox, now: number, logger: Logger): Promise<void> {
  const wallets = await resealWallets(db, current, previous, now);
  let secrets = 0;
  const reseal = (sealed: string): string | undefined => {
    if (tryOpen(current, sealed) !== undefined) return undefined;
    const plain = tryOpen(previous, sealed);
    return plain === undefined ? undefined : current.seal(plain);
  };
  for (const row of await db.selectFrom('service_meta').select(['key', 'value']).where('key', '=', 'chain.embedded.payer').execute()) {
    const next = reseal(row.value);
    if (next !== undefined) secrets += Number((await db.updateTable('service_meta').set({ value: next }).where('key', '=', row.key).where('value', '=', row.value).executeTakeFirst()).numUpdatedRows);
  }
  for (const row of await db.selectFrom('launches').select(['id', 'webhook_secret_enc']).execute()) {
    const next = reseal(row.webhook_secret_enc);
    if (next !== undefined) secrets += Number((await db.updateTable('launches').set({ webhook_secret_enc: next }).where('id', '=', row.id).where('webhook_secret_enc', '=', row.webhook_secret_enc).executeTakeFirst()).numUpdatedRows);
  }
  for (const row of await db.selectFrom('webhook_endpoints').select(['id', 'secret_enc', 'previous_secret_enc']).execute()) {
    const next = reseal(row.secret_enc);
    const previousNext = row.previous_secret_enc === null ? undefined : reseal(row.previous_secret_enc);
    if (next === undefined && previousNext === undefined) continue;
    await db
      .updateTable('webhook_endpoints')
      .set({ secret_enc: next ?? row.secret_enc, previous_secret_enc: previousNext ?? row.previous_secret_enc })
      .where('id', '=', row.id)
      .execute();
    secrets += 1;
  }
  if (wallets.resealed + secrets > 0) logger.info({ wallets: wallets.resealed, secrets }, 're-sealed under the new SECRET_KEY');
  if (wallets.unreadable.length > 0) logger.error({ owners: wallets.unreadable }, 'funding wallets that neither SECRET_KEY nor SECRET_KEY_PREVIOUS opens');
}
