import { afterEach, describe, expect, it } from 'vitest';
import { createChainStepRunner } from '../../src/launches/chainStepRunner.js';
import { LaunchRunner } from '../../src/launches/runner.js';
import type { StepRunner } from '../../src/launches/stepPort.js';
import { manualClock } from '../../src/lib/clock.js';
import { onPostgres } from '../support/database.js';
import { silentLogger } from '../../src/lib/logger.js';
import { stepExecutorsFor } from '../../src/app/serviceChain.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { readMintBack } from '../chain/support/readBack.js';
import { TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

const LEASE_MS = 30_000;
let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** A service on a manual clock, one queued launch, and runners whose step runner the test can intercept. */
async function setup() {
  const clock = manualClock(Date.now());
  t = await startTestService({ clock });
  const service = t.service;
  const key = await t.key('acme', ['launches:write', 'launches:read']);
  const launchId = await t.createLaunch(key);
  const real = createChainStepRunner({ chain: service.chain, secretKey: t.config.secretKey, executors: stepExecutorsFor() });
  /** Runs of each step body (the chain work), by step name. */
  const runs: Record<string, number> = {};
  let intercept: ((step: string) => Promise<void>) | undefined;
  const runStep: StepRunner = async (input) => {
    const hook = intercept;
    intercept = undefined;
    await hook?.(input.step);
    runs[input.step] = (runs[input.step] ?? 0) + 1;
    return real(input);
  };
  const runner = () =>
    new LaunchRunner({ db: service.db, clock, logger: silentLogger(), signal: noopSignal, runStep, finalize: async () => undefined, leaseMs: LEASE_MS });
  const events = async () =>
    (await service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute()).map((e) => ({
      event: e.event,
      step: (JSON.parse(e.body) as { data: { step?: string } }).data.step,
    }));
  const launch = () => service.db.selectFrom('launches').selectAll().where('id', '=', launchId).executeTakeFirstOrThrow();
  const steps = () => service.db.selectFrom('launch_steps').select(['name', 'status']).where('launch_id', '=', launchId).orderBy('position').execute();
  /**
   * Time passes beyond the lease. On PostgreSQL leases run on the database clock (docs/architecture.md, SQLite and PostgreSQL), which a
   * test cannot jump, so the lease's deadline is moved into the past instead.
   */
  const pastLease = async () => {
    clock.advance(2 * LEASE_MS);
    if (onPostgres) await service.db.updateTable('launches').set({ lease_expires_at: 0 }).where('id', '=', launchId).where('lease_owner', 'is not', null).execute();
  };
  return { clock, pastLease, service, launchId, runs, runner, events, launch, steps, onNextStep: (f: (step: string) => Promise<void>) => (intercept = f) };
}

describe('fenced launch leases', () => {
  it('a clock jump of twice the lease mid-step: the runner does not claim the launch it runs, each step runs once, one event per step, the launch completes', async () => {
    const s = await setup();
    const runner = s.runner();
    let reclaimed = -1;
    s.onNextStep(async () => {
      // Mid create_mint the clock jumps past the lease: the launch now looks abandoned.
      await s.pastLease();
      reclaimed = await runner.drain();
    });
    expect(await runner.drain()).toBe(1);
    expect(reclaimed).toBe(0);
    expect(s.runs).toEqual({ create_mint: 1, create_metadata: 1, distribute_supply: 1 });
    expect((await s.launch()).status).toBe('complete');
    expect((await s.events()).map((e) => e.event)).toEqual(TOKEN_LAUNCH_EVENTS);
    expect((await s.events()).filter((e) => e.event === 'launch.step_complete').map((e) => e.step)).toEqual(['create_mint', 'create_metadata', 'distribute_supply']);
  });

  it('a run whose lease another runner took over writes nothing more: the new holder completes the launch, every step once in effect', async () => {
    const s = await setup();
    const stalled = s.runner();
    const successor = s.runner();
    let successorRan = -1;
    s.onNextStep(async () => {
      // The first runner stalls longer than its lease inside create_mint; another runner takes over.
      await s.pastLease();
      successorRan = await successor.drain();
    });
    expect(await stalled.drain()).toBe(1);
    expect(successorRan).toBe(1);
    const launch = await s.launch();
    expect(launch.status).toBe('complete');
    expect(launch.error).toBeNull();
    expect(await s.steps()).toEqual([
      { name: 'create_mint', status: 'complete' },
      { name: 'create_metadata', status: 'complete' },
      { name: 'distribute_supply', status: 'complete' },
    ]);
    // The stalled run resumed create_mint but could not even record its transaction: nothing was sent twice.
    expect((await s.events()).map((e) => e.event)).toEqual(TOKEN_LAUNCH_EVENTS);
    const mint = (JSON.parse(launch.results) as { mint: string }).mint;
    expect((await readMintBack(s.service.chain, mint)).mint.supply).toBe(1_000_000n * 10n ** 6n);
    const rows = await s.service.db.selectFrom('launch_steps').select(['name', 'transactions', 'pending_tx']).where('launch_id', '=', s.launchId).orderBy('position').execute();
    expect(rows.flatMap((r) => JSON.parse(r.transactions) as unknown[])).toHaveLength(2);
    // The record of create_mint's transaction is still the one that landed, not one the stalled run signed.
    const mintRow = rows[0]!;
    const landed = (JSON.parse(mintRow.transactions) as Array<{ signature: string }>)[0]!.signature;
    expect(JSON.stringify(JSON.parse(mintRow.pending_tx ?? '{}'))).toContain(landed);
  });
});
