import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { stepExecutors } from '../../src/chain/steps/index.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { createChainStepRunner } from '../../src/launches/chainStepRunner.js';
import { createLaunch } from '../../src/launches/createLaunch.js';
import { parseLaunchRequest } from '../../src/launches/request.js';
import { requeueFailedLaunch } from '../../src/launches/requeueLaunch.js';
import { LaunchRunner } from '../../src/launches/runner.js';
import type { StepRunner } from '../../src/launches/stepPort.js';
import { manualClock, systemClock, type Clock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import { launchBody } from '../support/fixtures.js';
import { presentStep } from '../../src/launches/present.js';

interface Harness {
  db: Db;
  chain: EmbeddedBackend;
  runner(runStep?: (inner: StepRunner) => StepRunner, options?: { clock?: Clock; backoff?: (attempt: number, retryAfterMs?: number) => number; transientDeadlineMs?: number; chainAvailable?: () => boolean }): LaunchRunner;
  launch(overrides?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function harness(options: { funded: boolean }): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'launch-fail-'));
  const secretKey = randomBytes(32);
  const { db, close } = openDatabase(join(dir, 'db.sqlite'));
  await migrateToLatest(db);
  const chain = await createEmbeddedBackend({ db, secretKey, clock: systemClock, logger: silentLogger(), funding: options.funded ? undefined : false });
  const inner = createChainStepRunner({ chain, secretKey, executors: stepExecutors });
  const h: Harness = {
    db,
    chain,
    runner: (wrap = (s) => s, options = {}) =>
      new LaunchRunner({ db, clock: systemClock, logger: silentLogger(), signal: { notify: () => undefined }, runStep: wrap(inner), finalize: async () => undefined, backoff: () => 0, ...options }),
    async launch(overrides = {}) {
      const parsed = parseLaunchRequest(launchBody(overrides), { requireHttps: false });
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
      return createLaunch({ db, clock: systemClock, secretBox: createSecretBox(secretKey), signal: { notify: () => undefined } }, { owner: 'acme', request: parsed.value, requestId: 'r1' });
    },
    async close() {
      await chain.close();
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  open.push(h);
  return h;
}

const events = (db: Db, launchId: string) =>
  db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute();

describe('launch failures', () => {
  it('retries a transient failure with backoff and completes', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    let faults = 2;
    const runner = h.runner((inner) => async (input) => {
      if (input.step === 'distribute_supply' && faults-- > 0) throw new TransientError('rpc_timeout', 'RPC timed out');
      return inner(input);
    });
    for (let pass = 0; pass < 5; pass++) await runner.drain();
    const launch = await h.db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(launch.status).toBe('complete');
    const step = await h.db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).where('name', '=', 'distribute_supply').executeTakeFirstOrThrow();
    expect(step.attempts).toBe(3);
  });

  it('keeps a step failing transiently waiting, with its cause and next try, and emits no launch.failed', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    const clock = manualClock(Date.now());
    const runner = h.runner(
      (inner) => async (input) => {
        if (input.step === 'distribute_supply') throw new TransientError('rpc_unavailable', 'RPC 503');
        return inner(input);
      },
      { clock, backoff: () => 60_000 },
    );
    const waitedFrom = clock.now();
    for (let minute = 0; minute < 30; minute++) {
      await runner.drain();
      clock.advance(60_000);
    }
    const launch = await h.db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(launch.status).toBe('processing');
    const step = await h.db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).where('name', '=', 'distribute_supply').executeTakeFirstOrThrow();
    expect(step.attempts).toBe(30);
    expect(presentStep(step)).toMatchObject({
      status: 'waiting',
      waitingFor: 'rpc_unavailable',
      waitingSince: new Date(waitedFrom).toISOString(),
      nextAttemptAt: new Date(waitedFrom + 30 * 60_000).toISOString(),
      error: { code: 'rpc_unavailable', message: 'RPC 503', attempt: 30 },
    });
    expect((await events(h.db, id)).map((e) => e.event)).not.toContain('launch.failed');
    expect(await h.db.selectFrom('dead_letters').selectAll().where('launch_id', '=', id).execute()).toHaveLength(0);
  });

  it('fails a step still failing transiently at LAUNCH_TRANSIENT_DEADLINE with launch.failed, partialResults and a dead letter', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    const clock = manualClock(Date.now());
    const runner = h.runner(
      (inner) => async (input) => {
        if (input.step === 'distribute_supply') throw new TransientError('rpc_unavailable', 'RPC 503');
        return inner(input);
      },
      { clock, backoff: () => 25 * 60_000, transientDeadlineMs: 60 * 60_000 },
    );
    // Tries at 0, 25 and 50 min wait; the next is moved to the deadline itself (60 min) and fails.
    const tries: number[] = [];
    for (let minute = 0; minute <= 60; minute++) {
      if ((await runner.drain()) > 0) tries.push(minute);
      clock.advance(60_000);
    }
    expect(tries).toEqual([0, 25, 50, 60]);
    const launch = await h.db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(launch.status).toBe('failed');
    const failed = (await events(h.db, id)).at(-1)!;
    expect(failed.event).toBe('launch.failed');
    const data = JSON.parse(failed.body).data;
    expect(data.error).toEqual({ code: 'rpc_unavailable', message: 'RPC 503 (still failing 60 min after the step\'s first transient failure, past LAUNCH_TRANSIENT_DEADLINE)', step: 'distribute_supply' });
    expect(data.partialResults.mint).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    const dead = await h.db.selectFrom('dead_letters').selectAll().where('launch_id', '=', id).execute();
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ kind: 'launch', step: 'distribute_supply', error_code: 'rpc_unavailable', status: 'open' });
  });

  it('waits at least the Retry-After a transient failure names', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    const clock = manualClock(Date.now());
    let faults = 1;
    const runner = h.runner(
      (inner) => async (input) => {
        if (input.step === 'create_mint' && faults-- > 0) throw new TransientError('rpc_rate_limited', 'RPC rate limited: 429', { retryAfterMs: 90_000 });
        return inner(input);
      },
      // The service's own backoff, not the tests' zero.
      { clock, backoff: undefined },
    );
    const start = clock.now();
    await runner.drain();
    const step = await h.db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow();
    expect(step.status).toBe('waiting');
    expect(step.next_attempt_at).toBe(start + 90_000);
    clock.advance(89_000);
    expect(await runner.drain()).toBe(0);
    clock.advance(1_000);
    expect(await runner.drain()).toBe(1);
    expect((await h.db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status).toBe('complete');
    const done = await h.db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow();
    expect(presentStep(done)).toMatchObject({ status: 'complete', waitingFor: null, nextAttemptAt: null, error: null });
    expect(done.waiting_since).toBeNull();
  });

  it('holds launches while the chain is unavailable (every RPC breaker open) instead of trying them', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    let available = false;
    let calls = 0;
    const runner = h.runner(
      (inner) => async (input) => {
        calls++;
        return inner(input);
      },
      { chainAvailable: () => available },
    );
    expect(await runner.drain()).toBe(0);
    expect(calls).toBe(0);
    expect((await h.db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status).toBe('queued');
    available = true;
    expect(await runner.drain()).toBe(1);
    expect((await h.db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status).toBe('complete');
  });

  it('fails at once with insufficient_balance at create_mint when the payer cannot pay, sending nothing', async () => {
    const h = await harness({ funded: false });
    const id = await h.launch();
    let calls = 0;
    const runner = h.runner((inner) => async (input) => {
      calls++;
      return inner(input);
    });
    await runner.drain();
    expect(calls).toBe(1);
    const launch = await h.db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(launch.status).toBe('failed');
    expect(JSON.parse(launch.error ?? '{}')).toMatchObject({ code: 'insufficient_balance', step: 'create_mint' });
    const step = await h.db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow();
    expect(step.pending_tx).toBeNull();
    expect(await h.db.selectFrom('chain_signatures' as never).selectAll().execute()).toHaveLength(0);
  });

  it('a retried dead letter resumes at the failed step without redoing finished steps', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    let broken = true;
    const calls: string[] = [];
    const runner = h.runner(
      (inner) => async (input) => {
        calls.push(input.step);
        if (input.step === 'distribute_supply' && broken) throw new NonRetriableError('program_error', 'transaction failed');
        return inner(input);
      },
    );
    await runner.drain();
    const dead = await h.db.selectFrom('dead_letters').selectAll().where('launch_id', '=', id).executeTakeFirstOrThrow();
    const mintBefore = (await h.db.selectFrom('launch_steps').select('transactions').where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow()).transactions;

    broken = false;
    calls.length = 0;
    await h.db.transaction().execute((trx) => requeueFailedLaunch(trx, systemClock, dead));
    await runner.drain();
    expect(calls).toEqual(['distribute_supply']);
    const launch = await h.db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(launch.status).toBe('complete');
    const mintAfter = (await h.db.selectFrom('launch_steps').select('transactions').where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow()).transactions;
    expect(mintAfter).toBe(mintBefore);
    const names = (await events(h.db, id)).map((e) => e.event);
    expect(names.slice(-4)).toEqual(['launch.queued', 'launch.processing', 'launch.step_complete', 'launch.complete']);
  });

  it('commits nothing for a step whose lease another runner took over meanwhile', async () => {
    const h = await harness({ funded: true });
    const id = await h.launch();
    const runner = h.runner((inner) => async (input) => {
      const output = await inner(input);
      // Simulate a takeover: our lease expired and another runner claimed the launch.
      await h.db.updateTable('launches').set({ lease_owner: 'runner_other' }).where('id', '=', id).execute();
      return output;
    });
    await runner.drain();
    const step = await h.db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow();
    expect(step.status).toBe('running');
    expect((await events(h.db, id)).map((e) => e.event)).toEqual(['launch.queued', 'launch.processing']);
    const launch = await h.db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(launch.lease_owner).toBe('runner_other');
  });
});
