import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { keypairFromSeed, serializeSigned, signBytes, signTransaction } from '../../src/chain/ed25519.js';

const blockhash = 'EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k';

function transfer(from: Keypair, extraSigner?: Keypair): Transaction {
  const tx = new Transaction({ feePayer: from.publicKey, blockhash, lastValidBlockHeight: 100 });
  tx.add(SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 5 }));
  if (extraSigner) tx.add(SystemProgram.transfer({ fromPubkey: extraSigner.publicKey, toPubkey: from.publicKey, lamports: 1 }));
  return tx;
}

describe('native ed25519', () => {
  it('derives the same keypair from a seed as web3.js does', () => {
    for (let i = 0; i < 5; i++) {
      const seed = randomBytes(32);
      const native = keypairFromSeed(seed);
      const reference = Keypair.fromSeed(seed);
      expect(native.publicKey.toBase58()).toBe(reference.publicKey.toBase58());
      expect(Buffer.from(native.secretKey)).toEqual(Buffer.from(reference.secretKey));
    }
  });

  it('produces the exact bytes web3.js signing produces, whatever order the signers come in', () => {
    const payer = Keypair.generate();
    const other = keypairFromSeed(randomBytes(32));
    const reference = transfer(payer, other);
    const native = Transaction.from(reference.serialize({ requireAllSignatures: false, verifySignatures: false }));
    reference.sign(payer, other);
    // Ed25519 signatures are deterministic, so equal bytes mean equal signatures.
    signTransaction(native, [other, payer, other]);
    expect(serializeSigned(native).toString('base64')).toBe(reference.serialize().toString('base64'));
    expect(native.verifySignatures()).toBe(true);
  });

  it('serializes the message it signed without compiling it again, only while the transaction is unchanged', () => {
    const payer = Keypair.generate();
    const other = Keypair.generate();
    const tx = transfer(payer, other);
    signTransaction(tx, [payer, other]);
    const compile = vi.spyOn(tx, 'serializeMessage');
    const signed = serializeSigned(tx);
    expect(compile).not.toHaveBeenCalled();
    compile.mockRestore();
    // The same bytes web3.js produces (and verifies) for the signed transaction.
    expect(signed.toString('base64')).toBe(tx.serialize().toString('base64'));
    expect(Transaction.from(signed).verifySignatures()).toBe(true);
    // Changed after signing: not the bytes of what was signed, but the message it describes now.
    tx.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: other.publicKey, lamports: 2 }));
    const changed = serializeSigned(tx);
    expect(changed.equals(signed)).toBe(false);
    expect(changed.subarray(changed.length - tx.serializeMessage().length).equals(tx.serializeMessage())).toBe(true);
    expect(Transaction.from(changed).instructions).toHaveLength(3);
  });

  it('signs arbitrary bytes verifiably with a keypair imported once', () => {
    const signer = Keypair.generate();
    const message = randomBytes(200);
    const a = signBytes(signer, message);
    const b = signBytes(signer, message);
    expect(a).toEqual(b);
    const tx = transfer(signer);
    signTransaction(tx, [signer]);
    expect(tx.verifySignatures()).toBe(true);
  });

  it('refuses a transaction whose required signer is missing, and a signer it does not need', () => {
    const payer = Keypair.generate();
    const other = Keypair.generate();
    expect(() => signTransaction(transfer(payer, other), [payer])).toThrow(/Missing signature/);
    expect(() => signTransaction(transfer(payer), [payer, other])).toThrow(/unknown signer/);
    expect(() => serializeSigned(transfer(payer))).toThrow(/not fully signed/);
  });
});
