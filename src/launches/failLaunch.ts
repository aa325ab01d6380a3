import type { Db } from '../db/database.js';
import type { LaunchRow } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import type { Funding } from '../funding/funding.js';
import { recordEvent, type OutboxSignal } from '../webhooks/outbox.js';
import { insertDeadLetter } from '../deadLetters/store.js';
import { failStep, updateLeasedLaunchOrThrow, type LaunchLease } from './runStore.js';

/**
 * Fails a launch at a step: the step and launch rows, `launch.failed` with `partialResults`, and a
 * dead letter for review, all in one transaction. `beforeFail` runs first (a creator-signed
 * launch's nonce rent goes back, docs/signing.md); if it throws, nothing is failed and the run is
 * retried, which reaches the same failure again.
 */
export async function failLaunch(
  deps: { db: Db; clock: Clock; signal: OutboxSignal; launch: LaunchRow; lease: LaunchLease; funding?: Pick<Funding, 'release' | 'recordSpends'> | undefined; beforeFail?: ((launch: LaunchRow) => Promise<void>) | undefined },
  failure: { step: string; code: string; message: string; results: Record<string, unknown>; deadLetter?: boolean; spent?: ReadonlyArray<{ signature: string; lamports: bigint }> },
): Promise<void> {
  const { launch } = deps;
  await deps.beforeFail?.(launch);
  const error = { code: failure.code, message: failure.message, step: failure.step };
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    await updateLeasedLaunchOrThrow(trx, deps.lease, { status: 'failed', error: JSON.stringify(error), completed_at: now, updated_at: now });
    await failStep(trx, deps.lease, { step: failure.step, error, now });
    await updateLeasedLaunchOrThrow(trx, deps.lease, { lease_owner: null, lease_expires_at: null });
    await recordEvent(trx, deps.clock, {
      launchId: launch.id,
      event: 'launch.failed',
      requestId: launch.request_id,
      data: { error, partialResults: failure.results },
    });
    // What the failed step's transactions spent (when they landed and their own save did not commit).
    if (failure.spent && failure.spent.length > 0) await deps.funding?.recordSpends(trx, launch, failure.spent);
    // The reservation closes with the launch: what it did not spend is free again.
    await deps.funding?.release(trx, launch.id);
    // A launch that never started (unsigned at its signing deadline) has nothing to review or retry.
    if (failure.deadLetter !== false) await insertDeadLetter(trx, { kind: 'launch', owner: launch.owner, launchId: launch.id, step: failure.step, errorCode: failure.code, errorMessage: failure.message, now });
  });
  deps.signal.notify();
}
