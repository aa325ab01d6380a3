import { join } from 'node:path';
import { Keypair, PublicKey } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';
import { curveBody, outsideTrader } from './support/trading.js';

// Two instances on one PostgreSQL database (the SQLite half has one process per file); needs the
// DBC and DAMM v2 binaries (docs/programs.md), skipped cleanly without them.
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];

describe.skipIf(!onPostgres || !haveBinaries(...IDS))(`graduation across two instances${needs(...IDS)}`, () => {
  const started: TestService[] = [];
  let database: { url: string; drop(): Promise<void> } | undefined;
  afterAll(async () => {
    for (const t of started) await t.close();
    await database?.drop();
  });

  it('two instances whose jobs claim the due graduation at the same moments make one migration and one pool.graduated', async () => {
    database = await createPostgresDatabase();
    const env = { DATABASE_URL: database.url, SECRET_KEY: Buffer.alloc(32, 5).toString('base64'), CHAIN_PROGRAMS_DIR: programsDir ?? '' };
    const a = await startTestService({ env });
    started.push(a);
    const key = await a.key('acme', ['launches:write', 'launches:read']);
    const id = await a.createLaunch(key, curveBody());
    await a.service.runner.drain();
    const launch = ((await (await a.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    expect(launch.status).toBe('complete');
    const pool = new PublicKey(launch.results.pool.address);
    const trader = Keypair.generate();
    await a.service.chain.requestAirdrop!(trader.publicKey, 100_000_000_000n);
    const outside = outsideTrader(a.service.chain);
    for (let i = 0; i < 12 && (await outside.curve(pool)).migrationProgress === 0; i += 1) await outside.buy(trader, pool, 10_000_000_000n + BigInt(i));
    await a.service.watcher.runOnce();

    // b starts from a's chain file: its chain has the full curve too, so either job could migrate it
    // (on its own copy of the chain: only the database's claim and fence keep it to one).
    const b = await startTestService({ env, embeddedChainFile: join(a.dir, 'chain.sqlite') });
    started.push(b);
    expect((await outsideTrader(b.service.chain).curve(pool)).migrationProgress).toBe(2);
    for (let round = 0; round < 5; round += 1) await Promise.all([a.service.graduator.runOnce(), b.service.graduator.runOnce()]);

    expect(a.service.graduator.sent + b.service.graduator.sent).toBe(1);
    const row = (await a.service.db.selectFrom('curve_migrations' as never).selectAll().executeTakeFirstOrThrow()) as any;
    expect(row.state).toBe('done');
    expect(Number(row.attempts)).toBe(1);
    const graduated = await a.service.db.selectFrom('outbox_events').select('body').where('launch_id', '=', id).where('event', '=', 'pool.graduated').execute();
    expect(graduated).toHaveLength(1);
    const spends = await a.service.db.selectFrom('funding_ledger').select('signature').where('launch_id', '=', id).where('signature', '=', row.signature).execute();
    expect(spends).toHaveLength(1);
  }, 120_000);
});
