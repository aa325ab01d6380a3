import { randomBytes } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { createSecretBox } from '../../crypto/secretBox.js';
import type { Db } from '../../db/database.js';
import { getMeta, putMetaIfAbsent } from './store.js';

const PAYER_KEY = 'chain.embedded.payer';
const GENESIS_KEY = 'chain.embedded.genesis';

/**
 * The embedded chain's payer: a random keypair created on first start and stored in
 * `service_meta` sealed under SECRET_KEY, so the same wallet (and its balance) survives restarts.
 */
export async function loadOrCreatePayer(db: Db, secretKey: Buffer): Promise<Keypair> {
  const box = createSecretBox(secretKey);
  let sealed = await getMeta(db, PAYER_KEY);
  if (sealed === undefined) {
    sealed = await putMetaIfAbsent(db, PAYER_KEY, box.seal(Buffer.from(Keypair.generate().secretKey).toString('base64')));
  }
  return Keypair.fromSecretKey(Buffer.from(box.open(sealed), 'base64'));
}

/** Genesis time and chain id of the embedded chain, fixed on first start. */
export async function loadOrCreateGenesis(db: Db, nowMs: number): Promise<{ genesisMs: number; chainId: string }> {
  const fresh = JSON.stringify({ genesisMs: nowMs, chainId: randomBytes(16).toString('hex') });
  const stored = (await getMeta(db, GENESIS_KEY)) ?? (await putMetaIfAbsent(db, GENESIS_KEY, fresh));
  return JSON.parse(stored) as { genesisMs: number; chainId: string };
}
