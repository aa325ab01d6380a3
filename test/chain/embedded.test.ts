import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { sql } from 'kysely';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import { Keypair } from '@solana/web3.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import type { GenesisHook } from '../../src/chain/embedded/programs.js';
import { readTokenMetadata } from '../../src/chain/programs/token2022/tokenMetadata.js';
import { requiredPrograms } from '../../src/chain/steps/index.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';
import { ataBalance, readMintBack } from './support/readBack.js';

describe('embedded chain token steps', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));
  const secretKey = Buffer.alloc(32, 7);

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey, clock, logger: silentLogger() });
  });
  afterEach(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });

  it('launches a token-2022 token whose mint, metadata, authorities and balances read back from the chain', async () => {
    const plan = samplePlan();
    const harness = new StepHarness(chain, plan);
    const minted = await harness.run('create_mint');
    const meta = await harness.run('create_metadata');
    const distributed = await harness.run('distribute_supply');

    const mint = minted.result.mint as string;
    expect(meta.result).toEqual({ metadata: mint });
    expect(minted.transactions).toHaveLength(1);
    const back = await readMintBack(chain, mint);
    expect(back.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(back.mint.decimals).toBe(9);
    expect(back.mint.supply).toBe(1_000_000_001n * 10n ** 9n);
    expect(back.mint.mintAuthority?.toBase58()).toBe(plan.creator);
    expect(back.mint.freezeAuthority?.toBase58()).toBe(plan.creator);
    const metadata = readTokenMetadata(back.mint);
    expect(metadata).toMatchObject({ name: 'Demo Token', symbol: 'DEMO', uri: 'https://example.com/demo.json', mint: back.mint.address });
    expect(metadata?.updateAuthority?.toBase58()).toBe(plan.creator);

    const allocations = distributed.result.allocations as Array<{ kind: string; owner: string; tokenAccount: string; amount: string }>;
    expect(allocations.map((a) => a.kind)).toEqual(['creator', 'vesting', 'treasury', 'pool']);
    const payer = chain.payer.publicKey.toBase58();
    expect(allocations.find((a) => a.kind === 'creator')?.owner).toBe(plan.creator);
    expect(allocations.filter((a) => a.kind !== 'creator').every((a) => a.owner === payer)).toBe(true);
    const total = allocations.reduce((sum, a) => sum + BigInt(a.amount), 0n);
    expect(total).toBe(back.mint.supply);
    expect(await ataBalance(chain, mint, plan.creator, TOKEN_2022_PROGRAM_ID)).toBe(BigInt(allocations[0]?.amount ?? -1));
    const payerHeld = allocations.filter((a) => a.owner === payer).reduce((sum, a) => sum + BigInt(a.amount), 0n);
    expect(await ataBalance(chain, mint, payer, TOKEN_2022_PROGRAM_ID)).toBe(payerHeld);
  });

  it('revokes the mint and freeze authorities when the request asks for it', async () => {
    const harness = new StepHarness(chain, samplePlan({ revokeMintAuthority: true, decimals: 6 }));
    const { result } = await harness.run('create_mint');
    await harness.run('create_metadata');
    await harness.run('distribute_supply');
    const back = await readMintBack(chain, result.mint as string);
    expect(back.mint.mintAuthority).toBeNull();
    expect(back.mint.freezeAuthority).toBeNull();
    expect(back.mint.decimals).toBe(6);
  });

  it('keeps every mint and balance across a restart on the same database file', async () => {
    const plan = samplePlan();
    const harness = new StepHarness(chain, plan);
    const { result } = await harness.run('create_mint');
    await harness.run('distribute_supply');
    const mint = result.mint as string;
    const payer = chain.payer.publicKey.toBase58();
    const payerHeld = await ataBalance(chain, mint, payer, TOKEN_2022_PROGRAM_ID);
    const payerLamports = await chain.getBalance(chain.payer.publicKey);
    await chain.close();
    await opened.close();

    opened = await tmp.open();
    clock.advance(5_000);
    chain = await createEmbeddedBackend({ db: opened.db, secretKey, clock, logger: silentLogger() });
    expect(chain.payer.publicKey.toBase58()).toBe(payer);
    expect(await chain.getBalance(chain.payer.publicKey)).toBe(payerLamports);
    const back = await readMintBack(chain, mint);
    expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
    expect(readTokenMetadata(back.mint)?.name).toBe('Demo Token');
    expect(await ataBalance(chain, mint, payer, TOKEN_2022_PROGRAM_ID)).toBe(payerHeld);
    expect(await ataBalance(chain, mint, plan.creator, TOKEN_2022_PROGRAM_ID)).toBe(back.mint.supply - payerHeld);
  });

  it('applies genesis hooks of loaded programs once, keeps their accounts across restarts and skips absent programs', async () => {
    const config = Keypair.generate().publicKey;
    const hook = (data: number[]): GenesisHook => ({
      programId: TOKEN_PROGRAM_ID, // loaded by default, standing in for a program from CHAIN_PROGRAMS_DIR
      accounts: ({ rentExempt }) => [{ address: config, owner: TOKEN_PROGRAM_ID, lamports: rentExempt(3), data: Uint8Array.from(data) }],
    });
    await chain.applyGenesisHook(hook([1, 2, 3]));
    await chain.applyGenesisHook({ programId: Keypair.generate().publicKey, accounts: () => [{ address: Keypair.generate().publicKey, owner: TOKEN_PROGRAM_ID, lamports: 1n, data: new Uint8Array(0) }] });
    await chain.close();
    await opened.close();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey, clock, logger: silentLogger(), genesisHooks: [hook([9, 9, 9])] });
    const info = await chain.getAccountInfo(config);
    expect(info?.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    expect([...(info?.data ?? [])]).toEqual([1, 2, 3]);
    const probe = await chain.probe();
    expect(probe.unixTimestamp).toBe(Math.floor(clock.now() / 1000));
    expect(probe.payerBalance).toBeGreaterThan(0);
  });

  it('rolls a transaction back when it cannot be persisted, so memory never runs ahead of the database', async () => {
    const harness = new StepHarness(chain, samplePlan());
    const mintKey = harness.context('create_mint').keys.mint.publicKey;
    // The database refuses writes, as a full disk would.
    await sql`create trigger refuse_writes before insert on chain_accounts begin select raise(abort, 'disk full'); end`.execute(opened.db);
    const error = await harness.run('create_mint').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ code: 'chain_persist_failed' });
    expect(await chain.getAccountInfo(mintKey)).toBeNull();

    await sql`drop trigger refuse_writes`.execute(opened.db);
    const { result } = await harness.run('create_mint');
    expect(result.mint).toBe(mintKey.toBase58());
    expect(await chain.getSignatureStatus(harness.pending.create_mint?.create_mint?.signature ?? '')).toEqual({ status: 'finalized', err: null });
  });

  it('creates a legacy SPL mint and refuses Metaplex metadata when the program is absent', async () => {
    const plan = samplePlan({ tokenStandard: 'spl-token', allocations: { creator: 100, vesting: 0, treasury: 0, pool: 0 } });
    expect(requiredPrograms(plan).map((p) => p.programId)).toEqual(['metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s']);
    const harness = new StepHarness(chain, plan);
    const { result } = await harness.run('create_mint');
    const back = await readMintBack(chain, result.mint as string);
    expect(back.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    await expect(harness.run('create_metadata')).rejects.toMatchObject({ code: 'chain_capability_missing' });
    await harness.run('distribute_supply');
    expect(await ataBalance(chain, result.mint as string, plan.creator, TOKEN_PROGRAM_ID)).toBe(plan.totalSupply * 10n ** 9n);
  });

  it('refuses a transaction too large to send as invalid_configuration, recording nothing', async () => {
    const harness = new StepHarness(chain, samplePlan({ uri: `https://example.com/${'x'.repeat(1200)}` }));
    const error = await harness.run('create_mint').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NonRetriableError);
    expect(error).toMatchObject({ code: 'invalid_configuration' });
    expect(harness.pending.create_mint).toEqual({});
  });

  it('fails with insufficient_balance before sending anything when the payer cannot pay', async () => {
    const poorTmp = await tempDatabase();
    const poorDb = await poorTmp.open();
    const poor = await createEmbeddedBackend({ db: poorDb.db, secretKey, clock, logger: silentLogger(), funding: false });
    try {
      const harness = new StepHarness(poor, samplePlan());
      const error = await harness.run('create_mint').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetriableError);
      expect(error).toMatchObject({ code: 'insufficient_balance' });
      expect(harness.pending.create_mint).toEqual({});
    } finally {
      await poor.close();
      await poorDb.close();
      poorTmp.cleanup();
    }
  });
});
