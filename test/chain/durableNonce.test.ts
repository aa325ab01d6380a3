import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Keypair, NonceAccount, NONCE_ACCOUNT_LENGTH, SystemProgram, Transaction } from '@solana/web3.js';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { embeddedRpcMethods } from '../../src/chain/embedded/rpcMethods.js';
import { tempDatabase } from './support/fixtures.js';

describe('durable nonces on the embedded chain', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 7), clock, logger: silentLogger() });
  });
  afterEach(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });

  async function send(tx: Transaction, ...signers: Keypair[]) {
    tx.sign(...signers);
    return chain.sendRawTransaction(tx.serialize());
  }

  it('lands a transaction on its nonce at any height, once, and refuses it after the nonce advanced', async () => {
    const owner = Keypair.generate();
    const nonce = Keypair.generate();
    await chain.requestAirdrop!(owner.publicKey, 1_000_000_000n);
    const rent = await chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    const bh = await chain.getLatestBlockhash();
    const setup = new Transaction({ feePayer: owner.publicKey, ...bh }).add(
      SystemProgram.createAccount({ fromPubkey: owner.publicKey, newAccountPubkey: nonce.publicKey, lamports: rent, space: NONCE_ACCOUNT_LENGTH, programId: SystemProgram.programId }),
      SystemProgram.nonceInitialize({ noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey }),
    );
    await send(setup, owner, nonce);
    const value = NonceAccount.fromAccountData((await chain.getAccountInfo(nonce.publicKey))!.data).nonce;

    const transfer = (lamports: number) =>
      new Transaction({ feePayer: owner.publicKey, nonceInfo: { nonce: value, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey }) } }).add(
        SystemProgram.transfer({ fromPubkey: owner.publicKey, toPubkey: Keypair.generate().publicKey, lamports }),
      );
    clock.advance(10 * 60_000); // far past any blockhash's validity
    await send(transfer(1_000_000), owner);
    const advanced = NonceAccount.fromAccountData((await chain.getAccountInfo(nonce.publicKey))!.data).nonce;
    expect(advanced).not.toBe(value);
    await expect(send(transfer(2_000_000), owner)).rejects.toMatchObject({ code: 'blockhash_expired' });

    // Its rent comes back with a full withdrawal once the nonce moved on.
    const before = await chain.getBalance(owner.publicKey);
    const close = new Transaction({ feePayer: owner.publicKey, ...(await chain.getLatestBlockhash()) }).add(
      SystemProgram.nonceWithdraw({ noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey, toPubkey: owner.publicKey, lamports: rent }),
    );
    await send(close, owner);
    expect(await chain.getAccountInfo(nonce.publicKey)).toBeNull();
    expect(await chain.getBalance(owner.publicKey)).toBe(before + rent - 5000);
  });

  it('takes a durable-nonce transaction over JSON-RPC (npm run chain) past any blockhash, preflight included, and refuses it once the nonce moved', async () => {
    const rpc = embeddedRpcMethods(chain);
    const owner = Keypair.generate();
    const nonce = Keypair.generate();
    await chain.requestAirdrop!(owner.publicKey, 1_000_000_000n);
    const rent = await chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    await send(
      new Transaction({ feePayer: owner.publicKey, ...(await chain.getLatestBlockhash()) }).add(
        SystemProgram.createAccount({ fromPubkey: owner.publicKey, newAccountPubkey: nonce.publicKey, lamports: rent, space: NONCE_ACCOUNT_LENGTH, programId: SystemProgram.programId }),
        SystemProgram.nonceInitialize({ noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey }),
      ),
      owner,
      nonce,
    );
    const value = NonceAccount.fromAccountData((await chain.getAccountInfo(nonce.publicKey))!.data).nonce;
    const transfer = new Transaction({ feePayer: owner.publicKey, nonceInfo: { nonce: value, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey }) } }).add(
      SystemProgram.transfer({ fromPubkey: owner.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 }),
    );
    transfer.sign(owner);
    const wire = transfer.serialize().toString('base64');
    clock.advance(10 * 60_000); // far past any blockhash's validity
    // Simulated as a node simulates it (old code: BlockhashNotFound, the nonce taken for a blockhash).
    expect(((await rpc.simulateTransaction!([wire, { encoding: 'base64', sigVerify: true }])) as { value: { err: unknown } }).value.err).toBeNull();
    const signature = await rpc.sendTransaction!([wire, { encoding: 'base64' }]);
    expect((await chain.getSignatureStatus(signature as string))?.err ?? null).toBeNull();
    // Its nonce moved on: the same message can no longer land, as a node answers it.
    const again = new Transaction({ feePayer: owner.publicKey, nonceInfo: { nonce: value, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey }) } }).add(
      SystemProgram.transfer({ fromPubkey: owner.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 2_000_000 }),
    );
    again.sign(owner);
    await expect(rpc.sendTransaction!([again.serialize().toString('base64'), { encoding: 'base64' }])).rejects.toThrow(/Blockhash not found/);
  });

  it('keeps nonce accounts made together apart: a transaction on one withdraws another that was advanced before', async () => {
    const owner = Keypair.generate();
    const [a, b] = [Keypair.generate(), Keypair.generate()];
    await chain.requestAirdrop!(owner.publicKey, 1_000_000_000n);
    const rent = await chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    const setup = new Transaction({ feePayer: owner.publicKey, ...(await chain.getLatestBlockhash()) });
    for (const n of [a, b]) {
      setup.add(
        SystemProgram.createAccount({ fromPubkey: owner.publicKey, newAccountPubkey: n.publicKey, lamports: rent, space: NONCE_ACCOUNT_LENGTH, programId: SystemProgram.programId }),
        SystemProgram.nonceInitialize({ noncePubkey: n.publicKey, authorizedPubkey: owner.publicKey }),
      );
    }
    await send(setup, owner, a, b);
    const value = async (k: Keypair) => NonceAccount.fromAccountData((await chain.getAccountInfo(k.publicKey))!.data).nonce;
    const [va, vb] = [await value(a), await value(b)];
    expect(va).toBe(vb); // initialized in one block: one nonce
    const on = (k: Keypair, nonce: string) =>
      new Transaction({ feePayer: owner.publicKey, nonceInfo: { nonce, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: k.publicKey, authorizedPubkey: owner.publicKey }) } });
    await send(on(a, va).add(SystemProgram.transfer({ fromPubkey: owner.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 })), owner);
    await send(on(b, vb).add(SystemProgram.nonceWithdraw({ noncePubkey: a.publicKey, authorizedPubkey: owner.publicKey, toPubkey: owner.publicKey, lamports: rent })), owner);
    expect(await chain.getAccountInfo(a.publicKey)).toBeNull();
  });
});
