import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { createEmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { startChainProcess } from './support/chainProcess.js';

const IDS = Object.values(DEFAULT_PROGRAM_IDS);

// CHAIN_CLONE_FROM against `npm run chain` started with the binaries as the source cluster.
describe.skipIf(!haveBinaries(...IDS))(`CHAIN_CLONE_FROM${needs(...IDS)}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'chain-clone-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('fetches the programs it lacks (program → programdata), caches them, and starts from the cache without the source', async () => {
    const source = await startChainProcess({ DATA_DIR: join(dir, 'source'), CHAIN_PROGRAMS_DIR: programsDir ?? '' });
    const cacheDir = join(dir, 'programs');
    const start = async (sourceUrl: string) => {
      const opened = openDatabase(join(dir, 'clone.sqlite'));
      await migrateToLatest(opened.db);
      const chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 4), clock: systemClock, logger: silentLogger(), clone: { sourceUrl, programIds: IDS, cacheDir } });
      const loaded = [...chain.loadedPrograms];
      const executable = await Promise.all(IDS.map(async (id) => chain.isProgramExecutable(new PublicKey(id))));
      await chain.close();
      await opened.close();
      return { loaded, executable };
    };
    try {
      const first = await start(source.url);
      expect(first.loaded.sort()).toEqual([...IDS].sort());
      expect(first.executable).toEqual(IDS.map(() => true));
      for (const id of IDS) {
        const original = readFileSync(join(programsDir ?? '', `${id}.so`));
        expect(readFileSync(join(cacheDir, `${id}.so`)).subarray(0, original.length).equals(original)).toBe(true);
      }
    } finally {
      await source.stop();
    }
    expect(IDS.every((id) => existsSync(join(cacheDir, `${id}.so`)))).toBe(true);
    const second = await start('http://127.0.0.1:9'); // the source is gone: the cache serves
    expect(second.executable).toEqual(IDS.map(() => true));
  }, 60_000);
});
