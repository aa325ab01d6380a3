import { createPublicKey, verify } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';

/** Whether `signature` is `signer`'s Ed25519 signature of `message` (a Solana transaction message). */
export function verifySignature(message: Uint8Array, signature: Uint8Array, signer: string): boolean {
  if (signature.length !== 64) return false;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(new PublicKey(signer).toBytes()).toString('base64url') }, format: 'jwk' });
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}
