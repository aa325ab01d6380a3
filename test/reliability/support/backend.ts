import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, type PublicKey } from '@solana/web3.js';
import { createChainBackend } from '../../../src/app/serviceChain.js';
import { loadConfig } from '../../../src/config/config.js';
import { migrateToLatest, openDatabase, type Db } from '../../../src/db/database.js';
import type { Clock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { startChainProcess } from '../../chain/support/chainProcess.js';
import { createPostgresDatabase, onPostgres, openDatabaseAt } from '../../support/database.js';

/**
 * Where a reliability suite's service processes keep their state. SQLite half: the database file in
 * `dir`, the embedded chain inside it (the suites' own setting). PostgreSQL half: a fresh database on
 * the test server and `npm run chain` as a process of its own (the embedded chain lives inside one
 * process, which PostgreSQL refuses, see src/app/service.ts), with a funded payer; and short leases,
 * since on PostgreSQL leases run on the database server's clock, which a restarted process's moved
 * clock (CLOCK_OFFSET_MS) does not move: a killed process's work is taken over once they expire in
 * real time.
 */
export interface ServiceBackend {
  /** The service processes' environment: the given one, plus where the database and chain are. */
  env: Record<string, string>;
  db: Db;
  /** True on PostgreSQL: a restart must not move its clock (lease deadlines are the server's). */
  postgres: boolean;
  /** Something `getMint`/`getAccount` read the chain through, and its closer. */
  chainReader(clock?: Clock): Promise<{ conn: never; close(): Promise<void> }>;
  close(): Promise<void>;
}

export async function startServiceBackend(dir: string, env: Record<string, string>): Promise<ServiceBackend> {
  if (!onPostgres) {
    const config = loadConfig({ ...env, DATA_DIR: dir });
    const opened = openDatabase(config.databasePath);
    await migrateToLatest(opened.db);
    return {
      env: { ...env, DATA_DIR: dir },
      db: opened.db,
      postgres: false,
      async chainReader(clock = { now: () => Date.now() }) {
        const chain = await createChainBackend(config, { db: opened.db, clock, logger: silentLogger() });
        return { conn: { getAccountInfo: (pk: PublicKey) => chain.getAccountInfo(pk) } as never, close: () => chain.close() };
      },
      close: () => opened.close(),
    };
  }
  const database = await createPostgresDatabase();
  const opened = openDatabaseAt(database.url);
  await migrateToLatest(opened.db);
  const chain = await startChainProcess({ DATA_DIR: join(dir, 'chain') });
  const payer = Keypair.generate();
  const payerPath = join(dir, 'payer.json');
  writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
  const connection = new Connection(chain.url, 'confirmed');
  await connection.requestAirdrop(payer.publicKey, 1_000 * LAMPORTS_PER_SOL);
  for (let i = 0; (await connection.getBalance(payer.publicKey, 'confirmed')) === 0; i++) {
    if (i >= 100) throw new Error('the chain process did not fund the payer');
    await new Promise((r) => setTimeout(r, 100)); // the chain is another process: poll it
  }
  return {
    env: {
      ...env,
      DATA_DIR: join(dir, 'service'),
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: '4',
      SOLANA_RPC_URL: chain.url,
      SOLANA_PAYER_KEYPAIR: payerPath,
      RUNNER_LEASE_MS: env.RUNNER_LEASE_MS ?? '2s',
      WEBHOOK_LEASE_MS: env.WEBHOOK_LEASE_MS ?? '2s',
    },
    db: opened.db,
    postgres: true,
    async chainReader() {
      return { conn: connection as never, close: async () => undefined };
    },
    async close() {
      await opened.close();
      await chain.stop();
      await database.drop();
    },
  };
}
