import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { staticKeyIndex } from '../../src/chain/embedded/history.js';
import { keypairFromSeed } from '../../src/chain/ed25519.js';
import type { ChainBackend } from '../../src/chain/backend.js';
import type { PendingTx, StepName } from '../../src/chain/steps/types.js';
import { stepExecutorsFor } from '../../src/app/serviceChain.js';
import { createChainStepRunner } from '../../src/launches/chainStepRunner.js';
import { parseLaunchRequest, storedRequest } from '../../src/launches/request.js';
import { tempDatabase } from './support/fixtures.js';
import bs58 from 'bs58';

/**
 * A step's spend on the embedded chain (docs/funding.md: one ledger entry per transaction the wallet
 * paid): the payer's lamports before minus after each transaction, read with `balancesAt` in one
 * batched read instead of decoding every stored transaction, and exactly what `getTransaction` says.
 */
describe('step spends on the embedded chain', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  const clock = manualClock(Date.UTC(2026, 10, 29, 3));

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 9), clock, logger: silentLogger() });
  });
  afterEach(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });

  it('balancesAt answers what getTransaction says at the address, -1 for an address not in it, null for an unknown signature', async () => {
    const recipient = Keypair.generate().publicKey;
    const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
    const tx = new Transaction({ feePayer: chain.payer.publicKey, blockhash, lastValidBlockHeight }).add(SystemProgram.transfer({ fromPubkey: chain.payer.publicKey, toPubkey: recipient, lamports: 1_234_567 }));
    tx.sign(chain.payer);
    const signature = await chain.sendRawTransaction(tx.serialize());
    const full = await chain.history.getTransaction(signature);
    if (!full) throw new Error('the transfer is not in the history');
    const unknown = bs58.encode(randomBytes(64));
    const stranger = Keypair.generate().publicKey.toBase58();

    const [payerSide, missing] = await chain.history.balancesAt(chain.payer.publicKey.toBase58(), [signature, unknown]);
    expect(missing).toBeNull();
    expect(payerSide).toMatchObject({ signature, slot: full.slot, err: null, index: 0, pre: full.preBalances[0], post: full.postBalances[0] });
    const recipientIndex = full.accountKeys.indexOf(recipient.toBase58());
    expect(recipientIndex).toBeGreaterThan(0);
    const [recipientSide] = await chain.history.balancesAt(recipient.toBase58(), [signature]);
    expect(recipientSide).toMatchObject({ index: recipientIndex, pre: 0n, post: 1_234_567n });
    const [strangerSide] = await chain.history.balancesAt(stranger, [signature]);
    expect(strangerSide).toMatchObject({ index: -1, pre: 0n, post: 0n });
    // The wire layout read in place agrees with web3.js's decoding on every key, legacy or versioned.
    const bytes = tx.serialize();
    full.accountKeys.forEach((key, i) => expect(staticKeyIndex(bytes, new PublicKey(key).toBytes())).toBe(i));
    expect(staticKeyIndex(bytes.subarray(0, 100), chain.payer.publicKey.toBytes())).toBe(-1);
  });

  it("a wallet-paid launch's spends are the wallet's balance drops, read without decoding a transaction", async () => {
    // The owner's wallet: a key pair from its seed, funded on chain.
    const seed = randomBytes(32);
    const wallet = keypairFromSeed(seed).publicKey;
    await chain.airdrop(wallet, 2n * BigInt(LAMPORTS_PER_SOL));
    let decoded = 0;
    const history = { ...chain.history, getTransaction: (signature: string) => ((decoded += 1), chain.history.getTransaction(signature)) };
    const counted: ChainBackend = { ...chain, history };
    const runStep = createChainStepRunner({ chain: counted, secretKey: randomBytes(32), executors: stepExecutorsFor() });
    const parsed = parseLaunchRequest({ name: 'Spend Token', ticker: 'SPND', totalSupply: '1000000', decimals: 6, uri: 'https://example.com/s.json', tokenStandard: 'token-2022', creator: Keypair.generate().publicKey.toBase58(), allocations: { creator: 100 }, revokeMintAuthority: true, webhookUrl: 'http://127.0.0.1:9/hook', webhookSecret: 'whsec_test_0123456789abcdef' }, { requireHttps: false });
    if (!parsed.ok) throw new Error(`invalid request: ${JSON.stringify(parsed)}`);
    const request = storedRequest(parsed.value);
    const launchId = `lch_${randomBytes(6).toString('hex')}`;
    const before = await chain.getLamports(wallet);
    const results: Record<string, unknown> = {};
    const spends: Array<{ signature: string; lamports: bigint }> = [];
    const signatures: string[] = [];
    for (const step of ['create_mint', 'create_metadata', 'distribute_supply'] as StepName[]) {
      const pending: Record<string, PendingTx> = {};
      const outcome = await runStep({ launchId, step, request, results: { ...results }, pending, payerSeed: new Uint8Array(seed), budgetLamports: BigInt(LAMPORTS_PER_SOL), recordPending: async (label, tx) => void (pending[label] = tx), logger: silentLogger() });
      Object.assign(results, outcome.result);
      spends.push(...(outcome.spent ?? []));
      signatures.push(...outcome.transactions.map((t) => t.signature));
    }
    const after = await chain.getLamports(wallet);

    expect(decoded).toBe(0);
    expect(signatures.length).toBeGreaterThan(0);
    expect(new Set(spends.map((s) => s.signature))).toEqual(new Set(signatures));
    // Exact: every lamport that left the wallet is in one spend, and each is what the chain recorded.
    expect(spends.reduce((sum, s) => sum + s.lamports, 0n)).toBe(before - after);
    for (const spend of spends) {
      const tx = await chain.history.getTransaction(spend.signature);
      expect(tx?.accountKeys[0]).toBe(wallet.toBase58());
      expect(spend.lamports).toBe(tx!.preBalances[0]! - tx!.postBalances[0]!);
    }
  });
});
