import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { metaplexMetadataAddress, readMetaplexMetadata } from '../../src/chain/programs/metaplex/metadata.js';
import { METAPLEX_TOKEN_METADATA_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';
import { ataBalance, readMintBack } from './support/readBack.js';

// Program binaries dumped from mainnet (`solana program dump`), provided by the environment, not the repo.
const DUMPS = process.env.CHAIN_TEST_PROGRAMS_DIR ?? process.env.CHAIN_PROGRAMS_DIR ?? '';
const METAPLEX_SO = join(DUMPS, `${METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58()}.so`);

describe.skipIf(!existsSync(METAPLEX_SO))('spl-token launch with Metaplex Token Metadata loaded from CHAIN_PROGRAMS_DIR', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  let programsDir: string;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));

  beforeAll(async () => {
    programsDir = mkdtempSync(join(tmpdir(), 'chain-programs-'));
    symlinkSync(METAPLEX_SO, join(programsDir, `${METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58()}.so`));
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 5), clock, logger: silentLogger(), programsDir });
  });
  afterAll(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
    rmSync(programsDir, { recursive: true, force: true });
  });

  it('creates a legacy mint with a Metaplex metadata account whose name, symbol and uri read back', async () => {
    expect(chain.loadedPrograms).toEqual([METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58()]);
    expect(await chain.isProgramExecutable(METAPLEX_TOKEN_METADATA_PROGRAM_ID)).toBe(true);
    const plan = samplePlan({ tokenStandard: 'spl-token', ticker: 'LEG', name: 'Legacy Token' });
    const harness = new StepHarness(chain, plan);
    const { result } = await harness.run('create_mint');
    const meta = await harness.run('create_metadata');
    await harness.run('distribute_supply');

    const mint = result.mint as string;
    const metadataAddress = metaplexMetadataAddress(new PublicKey(mint));
    expect(meta.result).toEqual({ metadata: metadataAddress.toBase58() });
    const info = await chain.getAccountInfo(metadataAddress);
    expect(info?.owner.equals(METAPLEX_TOKEN_METADATA_PROGRAM_ID)).toBe(true);
    const decoded = readMetaplexMetadata(info?.data ?? Buffer.alloc(0));
    expect(decoded).toMatchObject({ name: 'Legacy Token', symbol: 'LEG', uri: plan.uri });
    expect(decoded.mint.toBase58()).toBe(mint);
    expect(decoded.updateAuthority.toBase58()).toBe(plan.creator);

    const back = await readMintBack(chain, mint);
    expect(back.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
    expect(back.mint.mintAuthority?.toBase58()).toBe(plan.creator);
    expect(await ataBalance(chain, mint, plan.creator, TOKEN_PROGRAM_ID)).toBeGreaterThan(0n);

    // A second call finds the recorded transaction and changes nothing.
    const again = await harness.run('create_metadata');
    expect(again.transactions).toEqual(meta.transactions);

    // After a restart the program is loaded again and the metadata account is restored.
    await chain.close();
    await opened.close();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 5), clock, logger: silentLogger(), programsDir });
    const restored = await chain.getAccountInfo(metadataAddress);
    expect(readMetaplexMetadata(restored?.data ?? Buffer.alloc(0)).name).toBe('Legacy Token');
  });
});
