import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../../src/db/database.js';
import { silentLogger } from '../../../src/lib/logger.js';
import type { ChainBackend } from '../../../src/chain/backend.js';
import { deriveLaunchKeys } from '../../../src/chain/keys.js';
import type { LaunchPlan, PendingTx, StepContext, StepName } from '../../../src/chain/steps/types.js';
import { stepExecutors } from '../../../src/chain/steps/index.js';

/** A migrated SQLite file in a fresh temp directory. */
export async function tempDatabase(): Promise<{ path: string; open(): Promise<OpenedDatabase>; cleanup(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'chain-test-'));
  const path = join(dir, 'test.sqlite');
  const first = openDatabase(path);
  await migrateToLatest(first.db);
  await first.close();
  return { path, open: async () => openDatabase(path), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A token-2022 plan with every allocation kind and a fresh creator. */
export function samplePlan(overrides: Partial<LaunchPlan> = {}): LaunchPlan {
  return {
    launchId: `lch_${randomBytes(6).toString('hex')}`,
    name: 'Demo Token',
    ticker: 'DEMO',
    uri: 'https://example.com/demo.json',
    decimals: 9,
    totalSupply: 1_000_000_001n,
    tokenStandard: 'token-2022',
    creator: Keypair.generate().publicKey.toBase58(),
    allocations: { creator: 20, vesting: 15, treasury: 35, pool: 30 },
    revokeMintAuthority: false,
    ...overrides,
  };
}

/** A stand-in for the runner's step table: pending txs and results kept per step, like the DB would. */
export class StepHarness {
  readonly pending: Record<string, Record<string, PendingTx>> = {};
  readonly results: Record<string, unknown> = {};
  readonly masterSecret = randomBytes(32);
  /** When set, recordPending persists the tx and then throws this (a crash right after recording). */
  crashAfterRecord: Error | undefined;

  constructor(
    public chain: ChainBackend,
    readonly plan: LaunchPlan,
  ) {}

  context(step: StepName): StepContext {
    const pending = (this.pending[step] ??= {});
    return {
      plan: this.plan,
      keys: deriveLaunchKeys(this.masterSecret, this.plan.launchId),
      results: { ...this.results },
      pending: { ...pending },
      recordPending: async (label, tx) => {
        pending[label] = tx;
        if (this.crashAfterRecord) {
          const crash = this.crashAfterRecord;
          this.crashAfterRecord = undefined;
          throw crash;
        }
      },
      chain: this.chain,
      payer: this.chain.payer,
      logger: silentLogger(),
    };
  }

  async run(step: StepName) {
    const executor = stepExecutors[step];
    if (!executor) throw new Error(`no executor for ${step}`);
    const outcome = await executor(this.context(step));
    Object.assign(this.results, outcome.result);
    return outcome;
  }
}
