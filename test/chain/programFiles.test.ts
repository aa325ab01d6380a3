import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { ProgramFileError } from '../../src/chain/embedded/programs.js';
import { startChainThread } from '../../src/app/serviceChain.js';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../src/db/database.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { testConfig } from '../support/config.js';
import { captureLogger } from '../support/webhooks.js';
import { tempDatabase } from './support/fixtures.js';

const LOCK = 'LocpQgucEQHbqNABEYvBvwoxCPsSbG91A1QaQhQQqjn';

describe('CHAIN_PROGRAMS_DIR files', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let dir: string;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));
  const start = (logger = captureLogger().logger) => createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 7), clock, logger, programsDir: dir });

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    dir = mkdtempSync(join(tmpdir(), 'launch-programs-'));
  });
  afterEach(async () => {
    await opened.close();
    tmp.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a junk program file, naming the file and what is wrong', async () => {
    const path = join(dir, `${LOCK}.so`);
    writeFileSync(path, 'this is not a program');
    await expect(start()).rejects.toThrow(`CHAIN_PROGRAMS_DIR: ${path} is not a loadable Solana program (it is not an ELF file); dump it again with \`solana program dump -u m ${LOCK} ${LOCK}.so\``);
  });

  it('refuses a truncated ELF with the loader reason and the file name', async () => {
    const path = join(dir, `${LOCK}.so`);
    const elf = Buffer.alloc(128);
    elf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]);
    writeFileSync(path, elf);
    const error = (await start().then(
      () => undefined,
      (e: unknown) => e,
    )) as Error;
    expect(error.name).toBe('ProgramFileError');
    expect(error.message).toContain(path);
    expect(error.message).not.toContain('Failed to add program');
  });

  it('refuses a junk program file on the chain thread with the same error class, for main.ts to print in one line', async () => {
    const path = join(dir, `${LOCK}.so`);
    writeFileSync(path, 'this is not a program');
    const { config, cleanup } = testConfig({ CHAIN_THREAD: 'on', CHAIN_PROGRAMS_DIR: dir });
    const database = openDatabase(config.databasePath);
    try {
      await migrateToLatest(database.db);
      const error = await startChainThread(config, { clock: systemClock, logger: silentLogger(), writeLock: database.shareWriteLock() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProgramFileError);
      expect((error as ProgramFileError).path).toBe(path);
      expect((error as ProgramFileError).message).toContain('(it is not an ELF file)');
    } finally {
      await database.close();
      cleanup();
    }
  });

  it('warns about files not named <programId>.so instead of ignoring them silently', async () => {
    writeFileSync(join(dir, 'README.txt'), 'notes');
    writeFileSync(join(dir, 'jupiter-lock.so'), 'misnamed');
    const captured = captureLogger();
    const chain = await start(captured.logger);
    await chain.close();
    const warning = captured.lines.map((l) => JSON.parse(l) as { msg: string; ignored?: string[] }).find((l) => l.msg.includes('ignoring files'));
    expect(warning?.ignored).toEqual(['README.txt', 'jupiter-lock.so']);
    expect(chain.loadedPrograms).toEqual([]);
  });
});
