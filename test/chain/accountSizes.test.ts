import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { METAPLEX_TOKEN_METADATA_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { readTokenMetadata } from '../../src/chain/programs/token2022/tokenMetadata.js';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';
import { readMintBack } from './support/readBack.js';

// The request limits: name 1..32 bytes, ticker 1..10, uri 0..200.
const NAME_MAX = 32;
const TICKER_MAX = 10;
const URI_MAX = 200;

/** Valid fields whose lengths add up to `total` (a uri is empty or at least `ar://x`, 6 bytes). */
function fieldsOfTotal(total: number): { name: string; ticker: string; uri: string } {
  let uri = Math.max(0, total - NAME_MAX - TICKER_MAX);
  if (uri > 0 && uri < 6) uri = 6;
  const ticker = Math.min(TICKER_MAX, total - uri - 1);
  const name = total - uri - ticker;
  return { name: 'N'.repeat(name), ticker: 'T'.repeat(ticker), uri: uri === 0 ? '' : `ar://${'u'.repeat(uri - 5)}` };
}

const DUMPS = process.env.CHAIN_TEST_PROGRAMS_DIR ?? process.env.CHAIN_PROGRAMS_DIR ?? '';
const METAPLEX_SO = join(DUMPS, `${METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58()}.so`);

describe('right-sized accounts: every total length of name, ticker and uri the limits allow', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  let programsDir: string | undefined;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));
  const haveMetaplex = existsSync(METAPLEX_SO);

  beforeAll(async () => {
    if (haveMetaplex) {
      programsDir = mkdtempSync(join(tmpdir(), 'chain-programs-'));
      symlinkSync(METAPLEX_SO, join(programsDir, `${METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58()}.so`));
    }
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 9), clock, logger: silentLogger(), programsDir });
  });
  afterAll(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
    if (programsDir) rmSync(programsDir, { recursive: true, force: true });
  });

  const totals = Array.from({ length: NAME_MAX + TICKER_MAX + URI_MAX - 1 }, (_, i) => i + 2);

  it('the sweep covers every total from 2 to 242 bytes with valid fields', () => {
    for (const total of totals) {
      const f = fieldsOfTotal(total);
      expect(f.name.length + f.ticker.length + f.uri.length).toBe(total);
      expect(f.name.length).toBeGreaterThanOrEqual(1);
      expect(f.name.length).toBeLessThanOrEqual(NAME_MAX);
      expect(f.ticker.length).toBeGreaterThanOrEqual(1);
      expect(f.ticker.length).toBeLessThanOrEqual(TICKER_MAX);
      expect(f.uri === '' || /^ar:\/\/u+$/.test(f.uri)).toBe(true);
    }
  });

  it('creates a token-2022 mint with its metadata for every total length', async () => {
    const failed: string[] = [];
    for (const total of totals) {
      const fields = fieldsOfTotal(total);
      const harness = new StepHarness(chain, samplePlan({ tokenStandard: 'token-2022', ...fields }));
      try {
        const minted = await harness.run('create_mint');
        const back = await readMintBack(chain, minted.result.mint as string);
        expect(readTokenMetadata(back.mint)).toMatchObject({ name: fields.name, symbol: fields.ticker, uri: fields.uri });
      } catch (error) {
        failed.push(`${total}: ${(error as Error).message}`);
      }
    }
    expect(failed).toEqual([]);
  });

  it.skipIf(!haveMetaplex)('creates an spl-token mint and its Metaplex metadata for every total length', async () => {
    const failed: string[] = [];
    for (const total of totals) {
      const harness = new StepHarness(chain, samplePlan({ tokenStandard: 'spl-token', ...fieldsOfTotal(total) }));
      try {
        await harness.run('create_mint');
        await harness.run('create_metadata');
      } catch (error) {
        failed.push(`${total}: ${(error as Error).message}`);
      }
    }
    expect(failed).toEqual([]);
  });
});
