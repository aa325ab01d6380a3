import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { createLaunch } from '../../src/launches/createLaunch.js';
import { parseLaunchRequest } from '../../src/launches/request.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createChainBackend } from '../../src/app/serviceChain.js';
import { ataBalance, readMintBack } from '../chain/support/readBack.js';
import { launchBody, TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'launch-crash-'));
const env = { ...process.env, DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the runner in a real child process that SIGKILLs itself at `crashAt`. */
function runChild(crashAt: string): { signal: NodeJS.Signals | null; status: number | null; stdout: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support', 'crashingRunner.ts')], {
    env: { ...env, CRASH_AT: crashAt },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { signal: result.signal, status: result.status, stdout: result.stdout };
}

// Every dangerous instant of the three token steps, in the order a launch reaches them.
const CRASH_POINTS = [
  'record:create_mint',
  'sent:create_mint',
  'done:create_mint',
  'boundary:create_metadata',
  'done:create_metadata',
  'boundary:distribute_supply',
  'record:distribute_supply',
  'sent:distribute_supply',
  'done:distribute_supply',
];

describe('crash safety of launches (real processes killed with SIGKILL)', () => {
  it('resumes after a kill at every step boundary and between signed and confirmed, with one mint and the whole supply', async () => {
    const config = loadConfig(env);
    const opened = openDatabase(config.databasePath);
    await migrateToLatest(opened.db);
    const body = launchBody({ totalSupply: '5000000', decimals: 6, allocations: { creator: 100 } });
    const parsed = parseLaunchRequest(body, { requireHttps: false });
    if (!parsed.ok) throw new Error('fixture request invalid');
    const launchId = await createLaunch(
      { db: opened.db, clock: systemClock, secretBox: createSecretBox(config.secretKey), signal: { notify: () => undefined } },
      { owner: 'acme', request: parsed.value, requestId: 'req-crash' },
    );
    await opened.close();

    for (const point of CRASH_POINTS) {
      const run = runChild(point);
      expect(run.stdout, `run crashing at ${point}`).toContain(`crashing at ${point}`);
      expect(run.signal).toBe('SIGKILL');
    }
    const last = runChild('');
    expect(last.status).toBe(0);
    expect(last.stdout).toContain('complete');

    const { db, close } = openDatabase(config.databasePath);
    try {
      const launch = await db.selectFrom('launches').selectAll().where('id', '=', launchId).executeTakeFirstOrThrow();
      expect(launch.status).toBe('complete');
      const events = await db.selectFrom('outbox_events').select(['event', 'sequence']).where('launch_id', '=', launchId).orderBy('sequence').execute();
      expect(events.map((e) => e.event)).toEqual(TOKEN_LAUNCH_EVENTS);
      expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);

      const mint = JSON.parse(launch.results).mint as string;
      const chain = await createChainBackend(config, { db, clock: systemClock, logger: silentLogger() });
      expect((await readMintBack(chain, mint)).mint.supply).toBe(5_000_000n * 10n ** 6n);
      expect(await ataBalance(chain, mint, body.creator as string, TOKEN_2022_PROGRAM_ID)).toBe(5_000_000n * 10n ** 6n);
      // Exactly one mint: the only token-2022 mint account any transaction of this launch created.
      const signatures = await db.selectFrom('launch_steps').select('transactions').where('launch_id', '=', launchId).execute();
      const types = signatures.flatMap((s) => (JSON.parse(s.transactions) as Array<{ type: string }>).map((t) => t.type));
      expect(types.filter((t) => t === 'mint')).toHaveLength(1);
      await chain.close();
    } finally {
      await close();
    }
  }, 240_000);
});
