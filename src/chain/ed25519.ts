import { createPrivateKey, createPublicKey, sign as nativeSign, type KeyObject } from 'node:crypto';
import { Keypair, type Signer, type Transaction } from '@solana/web3.js';

/**
 * Ed25519 through Node's native crypto (OpenSSL). `@solana/web3.js` 1.x signs, verifies and derives
 * public keys with `@noble/curves` in pure JavaScript on the event loop: in a profile of the launch
 * pipeline that was a quarter of the CPU (signature verification inside `serialize()` alone 14%).
 * Native signing is an order of magnitude cheaper, and each signer's key is imported once.
 */

// PKCS#8 wrapping of a raw 32-byte Ed25519 seed (RFC 8410): this prefix, then the seed.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

const imported = new WeakMap<object, KeyObject>();

/**
 * Imports a seed. A JWK import is ~20x cheaper than OpenSSL 3's DER decoder (≈30 µs vs ≈700 µs
 * here); Node builds the key from `d` alone, so `x` is the known public key or, when deriving it,
 * empty. DER stays as the fallback should a Node version insist on a valid `x`.
 */
function privateKeyFromSeed(seed: Uint8Array, publicKey?: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new Error('an ed25519 seed is 32 bytes');
  const x = publicKey ? Buffer.from(publicKey).toString('base64url') : '';
  try {
    return createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(seed).toString('base64url'), x }, format: 'jwk' });
  } catch {
    return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  }
}

/** The signer's private key as a native key object, imported on first use and kept with the signer. */
function keyOf(signer: Signer): KeyObject {
  let key = imported.get(signer);
  if (!key) {
    const secret = signer.secretKey;
    key = privateKeyFromSeed(secret.subarray(0, 32), secret.subarray(32, 64));
    imported.set(signer, key);
  }
  return key;
}

/** Same result as `Keypair.fromSeed`, with the public key derived natively. */
export function keypairFromSeed(seed: Uint8Array): Keypair {
  const key = privateKeyFromSeed(seed);
  const { x } = createPublicKey(key).export({ format: 'jwk' });
  if (typeof x !== 'string') throw new Error('ed25519 public key could not be derived');
  const secretKey = new Uint8Array(64);
  secretKey.set(seed, 0);
  secretKey.set(Buffer.from(x, 'base64url'), 32);
  // The public half was just derived from the seed, so the library's (pure-JS) check is skipped.
  const keypair = Keypair.fromSecretKey(secretKey, { skipValidation: true });
  imported.set(keypair, key);
  return keypair;
}

/** A detached Ed25519 signature of `message` by `signer`. */
export function signBytes(signer: Signer, message: Uint8Array): Buffer {
  return nativeSign(null, message, keyOf(signer));
}

/**
 * What `Transaction.sign(...signers)` does (signers de-duplicated, the message compiled once, every
 * signature set), with native signatures. Throws when a signer the message requires is missing.
 */
export function signTransaction(tx: Transaction, signers: Signer[]): void {
  const unique = signers.filter((s, i, all) => all.findIndex((o) => o.publicKey.equals(s.publicKey)) === i);
  if (unique.length === 0) throw new Error('No signers');
  tx.signatures = unique.map((s) => ({ signature: null, publicKey: s.publicKey }));
  // Compiling puts the signature slots in the message's order (and empties them if the signers differ).
  const message = tx.serializeMessage();
  for (const signer of unique) {
    const pair = tx.signatures.find((p) => p.publicKey.equals(signer.publicKey));
    if (!pair) throw new Error(`unknown signer: ${signer.publicKey.toBase58()}`);
    pair.signature = signBytes(signer, message);
  }
  const missing = tx.signatures.filter((pair) => pair.signature === null).map((pair) => pair.publicKey.toBase58());
  if (missing.length > 0) throw new Error(`Missing signature for public key(s) ${missing.join(', ')}`);
  signed.set(tx, { message, signatures: tx.signatures, blockhash: tx.recentBlockhash, instructions: tx.instructions.length, feePayer: tx.feePayer });
}

/**
 * The message each transaction was signed over, with what it was compiled from: serializing it
 * again through web3.js compiles the message again, and compiling — even web3.js's check of its own
 * cached message — base58-encodes every account key of every instruction (the largest allocation
 * of a launch: ~0.5 MB, and about half the signing path's time in the pipeline's profile).
 */
const signed = new WeakMap<Transaction, { message: Buffer; signatures: Transaction['signatures']; blockhash: Transaction['recentBlockhash']; instructions: number; feePayer: Transaction['feePayer'] }>();

/** `count` as Solana's compact-u16 ("shortvec"). */
function compactU16(count: number): Buffer {
  const bytes: number[] = [];
  let rest = count;
  for (;;) {
    const low = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      bytes.push(low);
      return Buffer.from(bytes);
    }
    bytes.push(low | 0x80);
  }
}

/** The wire bytes of a transaction signed by {@link signTransaction} (its signatures are not re-verified in JS). */
export function serializeSigned(tx: Transaction): Buffer {
  const at = signed.get(tx);
  // Signed by signTransaction and unchanged since (the same signature slots, blockhash, fee payer
  // and instructions): the wire bytes are the signatures, then the message they signed.
  if (at && at.signatures === tx.signatures && at.blockhash === tx.recentBlockhash && at.instructions === tx.instructions.length && sameKey(at.feePayer, tx.feePayer)) {
    const signatures = at.signatures.map((pair) => pair.signature);
    if (signatures.every((signature): signature is Buffer => signature !== null && signature.length === 64)) {
      return Buffer.concat([compactU16(signatures.length), ...signatures, at.message]);
    }
  }
  const bytes = tx.serialize({ requireAllSignatures: true, verifySignatures: false });
  // Serializing re-compiles the message and empties the slots of signers it no longer matches.
  if (tx.signatures.length === 0 || tx.signatures.some((pair) => pair.signature === null)) throw new Error('transaction is not fully signed');
  return bytes;
}

function sameKey(a: Transaction['feePayer'], b: Transaction['feePayer']): boolean {
  return a === b || (a !== undefined && b !== undefined && a.equals(b));
}
