import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import bs58 from 'bs58';
import type { TestService } from '../../support/service.js';

/**
 * The creator's wallet as a test holds it: an Ed25519 key made and used with node:crypto alone
 * (none of the service's code), its address the base58 of its public key.
 */
export interface CreatorWallet {
  address: string;
  /** Signs message bytes as a wallet would; base58. */
  sign(message: Uint8Array): string;
}

export function creatorWallet(seed?: Buffer): CreatorWallet {
  const raw = seed ?? Buffer.from(Array.from({ length: 32 }, () => Math.floor(Math.random() * 256)));
  const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(key).export({ format: 'jwk' }).x!;
  return { address: bs58.encode(Buffer.from(x, 'base64url')), sign: (message) => bs58.encode(sign(null, message, key)) };
}

export interface SigningView {
  status: string;
  expiresAt: string;
  transactions: Array<{ index: number; step: string; message: string; signers: string[]; signed: boolean }>;
}

export async function signingOf(t: TestService, key: string, id: string): Promise<SigningView> {
  const res = await t.request(`/api/launches/${id}/signing`, { key });
  if (res.status !== 200) throw new Error(`GET signing answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { signing: SigningView }).signing;
}

/** Signs every unsigned transaction offered and posts the signatures; returns the answer. */
export async function signAll(t: TestService, key: string, id: string, wallet: CreatorWallet): Promise<{ status: number; body: { signing?: SigningView; error?: { code: string } } }> {
  const view = await signingOf(t, key, id);
  const signatures = view.transactions.filter((tx) => !tx.signed).map((tx) => ({ index: tx.index, signature: wallet.sign(Buffer.from(tx.message, 'base64')) }));
  const res = await t.request(`/api/launches/${id}/signatures`, { method: 'POST', key, json: { signatures } });
  return { status: res.status, body: (await res.json()) as { signing?: SigningView; error?: { code: string } } };
}
