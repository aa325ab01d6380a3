import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { createEmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { CLONE_RETRY_AFTER_MS } from '../../src/chain/embedded/clone.js';
import { DEFAULT_PROGRAM_IDS, PROGRAM_NAMES, type ProgramIds } from '../../src/chain/programs/programIds.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import type { Clock } from '../../src/lib/clock.js';
import { silentLogger, type Logger } from '../../src/lib/logger.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { captureLogger } from '../support/webhooks.js';
import { startChainProcess } from './support/chainProcess.js';

const IDS = Object.values(DEFAULT_PROGRAM_IDS);
const PROGRAMS = (Object.keys(DEFAULT_PROGRAM_IDS) as Array<keyof ProgramIds>).map((key) => ({ programId: DEFAULT_PROGRAM_IDS[key], name: PROGRAM_NAMES[key] }));

const dir = mkdtempSync(join(tmpdir(), 'chain-clone-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A 127.0.0.1 port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An embedded chain on its own file that clones from `sourceUrl` into `cacheDir`. */
async function startChain(name: string, sourceUrl: string, cacheDir: string, options: { logger?: Logger; clock?: Clock } = {}) {
  const opened = openDatabase(join(dir, `${name}.sqlite`));
  await migrateToLatest(opened.db);
  const chain = await createEmbeddedBackend({
    db: opened.db,
    secretKey: Buffer.alloc(32, 4),
    clock: options.clock ?? { now: () => Date.now() },
    logger: options.logger ?? silentLogger(),
    clone: { sourceUrl, programs: PROGRAMS, cacheDir },
  });
  const executable = async () => Promise.all(IDS.map(async (id) => chain.isProgramExecutable(new PublicKey(id))));
  return { chain, executable, close: async () => (await chain.close(), await opened.close()) };
}

describe('CHAIN_CLONE_FROM with an unreachable source', () => {
  it('starts without the programs, says once in one line which are missing and both ways to provide them, and asks again only after a pause', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const capture = captureLogger();
    let now = 1_700_000_000_000;
    const started = await startChain('offline', url, join(dir, 'offline-cache'), { logger: capture.logger, clock: { now: () => now } });
    try {
      await started.chain.fetchPrograms?.(IDS); // waits for the background attempt the start began
      expect(await started.executable()).toEqual(IDS.map(() => false));
      const warnings = () => capture.lines.map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown; stack?: unknown }).filter((l) => l.level >= 40);
      expect(warnings()).toHaveLength(1);
      const [line] = warnings();
      expect(line!.err).toBeUndefined();
      expect(line!.msg).not.toContain('\n');
      expect(line!.msg).toBe(
        `the embedded chain lacks ${PROGRAMS.map((p) => `${p.name} (${p.programId})`).join(', ')} and could not fetch them from ${url} (ECONNREFUSED); ` +
          'provide them with CHAIN_PROGRAMS_DIR (a directory of <programId>.so files) or CHAIN_CLONE_FROM (a reachable cluster to fetch them from)',
      );
      // A launch asking right after is answered from the failure, without a second attempt…
      await started.chain.fetchPrograms?.([DEFAULT_PROGRAM_IDS.pool]);
      expect(warnings()).toHaveLength(1);
      // …and after the pause the source is asked again.
      now += CLONE_RETRY_AFTER_MS;
      await started.chain.fetchPrograms?.([DEFAULT_PROGRAM_IDS.pool]);
      expect(warnings()).toHaveLength(2);
      expect(warnings()[1]!.msg).toContain(`lacks Raydium CPMM (${DEFAULT_PROGRAM_IDS.pool}) and could not fetch`);
    } finally {
      await started.close();
    }
  });
});

// CHAIN_CLONE_FROM against `npm run chain` started with the binaries as the source cluster.
describe.skipIf(!haveBinaries(...IDS))(`CHAIN_CLONE_FROM${needs(...IDS)}`, () => {
  it('fetches the programs it lacks after the start into the running chain, caches them with their digest, and starts from the cache without the source', async () => {
    const source = await startChainProcess({ DATA_DIR: join(dir, 'source'), CHAIN_PROGRAMS_DIR: programsDir ?? '' });
    const cacheDir = join(dir, 'programs');
    try {
      const first = await startChain('clone', source.url, cacheDir);
      await first.chain.fetchPrograms?.(IDS);
      expect([...first.chain.loadedPrograms].sort()).toEqual([...IDS].sort());
      expect(await first.executable()).toEqual(IDS.map(() => true));
      await first.close();
      for (const id of IDS) {
        const original = readFileSync(join(programsDir ?? '', `${id}.so`));
        expect(readFileSync(join(cacheDir, `${id}.so`)).subarray(0, original.length).equals(original)).toBe(true);
        expect(readFileSync(join(cacheDir, `${id}.so.sha256`), 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
      }

      // A cached binary cut short (its digest no longer matches) is not loaded but fetched again.
      const pool = join(cacheDir, `${DEFAULT_PROGRAM_IDS.pool}.so`);
      const whole = readFileSync(pool);
      truncateSync(pool, 4096);
      const second = await startChain('clone', source.url, cacheDir);
      await second.chain.fetchPrograms?.(IDS);
      expect(await second.executable()).toEqual(IDS.map(() => true));
      await second.close();
      expect(readFileSync(pool).equals(whole)).toBe(true);
    } finally {
      await source.stop();
    }
    expect(IDS.every((id) => existsSync(join(cacheDir, `${id}.so`)))).toBe(true);
    const offline = await startChain('clone', `http://127.0.0.1:${await closedPort()}`, cacheDir); // the source is gone: the cache serves
    expect(await offline.executable()).toEqual(IDS.map(() => true));
    await offline.close();
  }, 120_000);

  it('refetches a cached binary without its digest', async () => {
    const source = await startChainProcess({ DATA_DIR: join(dir, 'source-2'), CHAIN_PROGRAMS_DIR: programsDir ?? '' });
    const cacheDir = join(dir, 'programs-2');
    const id = DEFAULT_PROGRAM_IDS.vesting;
    try {
      mkdirSync(cacheDir, { recursive: true });
      writeFileSync(join(cacheDir, `${id}.so`), readFileSync(join(programsDir ?? '', `${id}.so`)).subarray(0, 10_000));
      const started = await startChain('clone-2', source.url, cacheDir);
      await started.chain.fetchPrograms?.([id]);
      expect(await started.chain.isProgramExecutable(new PublicKey(id))).toBe(true);
      await started.close();
      expect(existsSync(join(cacheDir, `${id}.so.sha256`))).toBe(true);
    } finally {
      await source.stop();
    }
  }, 120_000);
});
