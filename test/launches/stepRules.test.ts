import { afterEach, describe, expect, it } from 'vitest';
import type { ChainBackend } from '../../src/chain/backend.js';
import { createChainStepRunner } from '../../src/launches/chainStepRunner.js';
import { LaunchRunner } from '../../src/launches/runner.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import { stepExecutorsFor } from '../../src/app/serviceChain.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function setup(options: { chain?: (real: ChainBackend) => ChainBackend; finalize?: () => Promise<void> } = {}) {
  const clock = manualClock(Date.now());
  t = await startTestService({ clock });
  const service = t.service;
  const key = await t.key('acme', ['launches:write', 'launches:read']);
  const launchId = await t.createLaunch(key);
  const chain = options.chain ? options.chain(service.chain) : service.chain;
  const runner = new LaunchRunner({
    db: service.db,
    clock,
    logger: silentLogger(),
    signal: noopSignal,
    runStep: createChainStepRunner({ chain, secretKey: t.config.secretKey, executors: stepExecutorsFor() }),
    finalize: options.finalize ?? (async () => undefined),
    finalizeTimeoutMs: 10 * 60_000,
    backoff: () => 1_000,
  });
  const launch = () => service.db.selectFrom('launches').selectAll().where('id', '=', launchId).executeTakeFirstOrThrow();
  const events = async () => (await service.db.selectFrom('outbox_events').select('event').where('launch_id', '=', launchId).orderBy('sequence').execute()).map((e) => e.event);
  const deadLetters = () => service.db.selectFrom('dead_letters').selectAll().where('launch_id', '=', launchId).execute();
  return { clock, service, runner, launch, events, deadLetters };
}

describe('step exactly-once rules', () => {
  it('a transaction reported failed whose effect landed is recognised by its postcondition: the launch completes', async () => {
    let misreport = true;
    const s = await setup({
      chain: (real) =>
        Object.assign(Object.create(real) as ChainBackend, {
          async confirmTransaction(...args: Parameters<ChainBackend['confirmTransaction']>) {
            await real.confirmTransaction(...args);
            if (misreport) {
              // The mint landed, but the confirmation the service got back says it failed.
              misreport = false;
              throw new NonRetriableError('program_error', 'transaction failed: custom program error: 0x0');
            }
          },
        }),
    });
    expect(await s.runner.drain()).toBe(1);
    expect(misreport).toBe(false);
    expect((await s.launch()).status).toBe('complete');
    expect(await s.deadLetters()).toEqual([]);
  });

  it('finalize gives up after its bound: launch.failed with finalize_timeout and a dead letter, not processing forever', async () => {
    let tries = 0;
    const s = await setup({
      finalize: async () => {
        tries += 1;
        throw new TransientError('rpc_timeout', 'signature not finalized yet');
      },
    });
    for (let round = 0; round < 30; round++) {
      await s.runner.drain();
      if (!['queued', 'processing'].includes((await s.launch()).status)) break;
      s.clock.advance(60_000);
    }
    const launch = await s.launch();
    expect(launch.status).toBe('failed');
    expect(JSON.parse(launch.error ?? '{}')).toMatchObject({ code: 'finalize_timeout', step: 'finalize' });
    expect(tries).toBeGreaterThan(1);
    expect((await s.events()).at(-1)).toBe('launch.failed');
    expect(await s.deadLetters()).toEqual([expect.objectContaining({ kind: 'launch', step: 'finalize', error_code: 'finalize_timeout', status: 'open' })]);
  });
});
