import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, PublicKey } from '@solana/web3.js';
import { describe, expect, it } from 'vitest';
import { DAMM_V2_PROGRAM_ID, DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { onPostgres } from '../support/database.js';
import { startTestService } from '../support/service.js';
import { curveBody, outsideTrader } from './support/trading.js';

// Needs the DBC and DAMM v2 binaries (docs/programs.md); skipped cleanly without them. The child
// processes open the service's SQLite file (chain and rows in one), so this runs in the SQLite half.
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];

describe.skipIf(!haveBinaries(...IDS) || onPostgres)(`a graduation survives SIGKILL (real processes)${needs(...IDS)}`, () => {
  it('killed after the migration was recorded, then after it was sent: the service resumes to one DAMM v2 pool, one pool.graduated, one ledger entry', async () => {
    const secret = randomBytes(32).toString('base64');
    const env = { CHAIN_PROGRAMS_DIR: programsDir ?? '', SECRET_KEY: secret, RUNNER_LEASE_MS: '2s' };
    const t = await startTestService({ env });
    let id: string;
    let pool: PublicKey;
    try {
      const key = await t.key('acme', ['launches:write', 'launches:read']);
      id = await t.createLaunch(key, curveBody());
      await t.service.runner.drain();
      const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      expect(launch.status).toBe('complete');
      pool = new PublicKey(launch.results.pool.address);
      const trader = Keypair.generate();
      await t.service.chain.requestAirdrop!(trader.publicKey, 100_000_000_000n);
      const outside = outsideTrader(t.service.chain);
      for (let i = 0; i < 12 && (await outside.curve(pool)).migrationProgress === 0; i += 1) await outside.buy(trader, pool, 10_000_000_000n + BigInt(i));
      // The watcher sees it full and makes the graduation due; the job runs in the children below.
      await t.service.watcher.runOnce();
      expect((await t.service.db.selectFrom('curve_migrations' as never).select(['state' as never]).executeTakeFirstOrThrow()) as unknown).toEqual({ state: 'due' });
    } finally {
      await t.service.stop();
    }

    try {
      const child = (crashAt: string) =>
        spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support', 'graduationChild.ts')], {
          env: { ...process.env, ...env, DATA_DIR: t.dir, LOG_LEVEL: 'silent', CHAIN_CLONE_FROM: 'off', CRASH_AT: crashAt },
          encoding: 'utf8',
          timeout: 90_000,
        });
      const recorded = child('record');
      expect(recorded.signal, recorded.stderr).toBe('SIGKILL');
      expect(recorded.stdout).toContain('crashing at record');
      const sent = child('sent');
      expect(sent.signal, sent.stderr).toBe('SIGKILL');
      expect(sent.stdout).toContain('crashing at sent');

      // The service again, on the same directory: once the killed lease expires its job claims the
      // graduation, finds the recorded transaction landed, and sends nothing.
      const reopened = await startTestService({ env: { ...env, DATA_DIR: t.dir } });
      try {
        const { db, chain, graduator } = reopened.service;
        const deadline = Date.now() + 30_000;
        while (((await db.selectFrom('curve_migrations' as never).select(['state' as never]).executeTakeFirstOrThrow()) as { state: string }).state !== 'done' && Date.now() < deadline) {
          await graduator.runOnce();
          await new Promise((r) => setTimeout(r, 200));
        }
        expect(graduator.sent).toBe(0);
        const row = (await db.selectFrom('curve_migrations' as never).selectAll().executeTakeFirstOrThrow()) as any;
        expect(row.state).toBe('done');
        expect((await chain.getAccountInfo(new PublicKey(row.amm_pool)))?.owner.equals(DAMM_V2_PROGRAM_ID)).toBe(true);
        const events = await db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id!).where('event', '=', 'pool.graduated').execute();
        expect(events).toHaveLength(1);
        expect(JSON.parse(events[0]!.body).data.signature).toBe(row.signature);
        // One migration on chain: the curve's history holds one successful migration (ours), the pool's first transaction.
        const history = await chain.history.signaturesForAddress(row.amm_pool, { limit: 1000 });
        expect(history.filter((s) => s.err === null).map((s) => s.signature)).toEqual([row.signature]);
        const spends = await db.selectFrom('funding_ledger').select(['signature', 'lamports']).where('launch_id', '=', id!).where('signature', '=', row.signature).execute();
        expect(spends).toHaveLength(1);
        expect(Number(spends[0]!.lamports)).toBeGreaterThan(20_000_000);
        expect((await outsideTrader(chain).curve(pool!)).isMigrated).toBe(true);
      } finally {
        await reopened.service.stop();
      }
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
    }
  }, 180_000);
});
