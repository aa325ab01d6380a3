import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { retryDeadLetter, type DeadLetterRetryDeps } from '../../src/deadLetters/retry.js';
import { getDeadLetter, insertDeadLetter, markDeadLetterResolved } from '../../src/deadLetters/store.js';
import { requeueFailedLaunch } from '../../src/launches/requeueLaunch.js';
import { manualClock } from '../../src/lib/clock.js';
import { ConflictError } from '../../src/lib/errors.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

describe('retrying a launch dead letter', () => {
  let tdb: TestDb;
  let deps: DeadLetterRetryDeps;
  let woken: string[];
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));

  beforeEach(async () => {
    tdb = await createTestDb();
    woken = [];
    deps = {
      db: tdb.db,
      clock,
      requeueLaunch: (trx, dl) => requeueFailedLaunch(trx, clock, dl),
      redeliver: async () => undefined,
      wake: (kind) => woken.push(kind),
    };
  });
  afterEach(async () => tdb.close());

  async function failedLaunchWithDeadLetter() {
    const launchId = await insertLaunch(tdb.db, clock, { url: 'http://127.0.0.1:9/hooks', secret: 'whsec_x', box: newSecretBox() });
    await tdb.db.updateTable('launches').set({ status: 'failed' }).where('id', '=', launchId).execute();
    const id = await insertDeadLetter(tdb.db, { kind: 'launch', owner: 'acme', launchId, step: 'create_dao', errorCode: 'program_error', errorMessage: 'boom', now: clock.now() });
    return { launchId, dl: (await getDeadLetter(tdb.db, id))! };
  }
  const queuedEvents = (launchId: string) => tdb.db.selectFrom('outbox_events').select('event').where('launch_id', '=', launchId).where('event', '=', 'launch.queued').execute();
  const statusOf = async (launchId: string) => (await tdb.db.selectFrom('launches').select('status').where('id', '=', launchId).executeTakeFirstOrThrow()).status;

  it('requeues the launch and marks the dead letter retried together, then wakes the runner', async () => {
    const { launchId, dl } = await failedLaunchWithDeadLetter();
    const retried = await retryDeadLetter(deps, dl);
    expect(retried).toMatchObject({ status: 'retried', retry_count: 1 });
    expect(await statusOf(launchId)).toBe('queued');
    expect(await queuedEvents(launchId)).toHaveLength(1);
    expect(woken).toEqual(['launch']);
  });

  it('requeues nothing when the dead letter was resolved after it was read', async () => {
    const { launchId, dl } = await failedLaunchWithDeadLetter();
    await markDeadLetterResolved(tdb.db, dl.id, clock.now());
    await expect(retryDeadLetter(deps, dl)).rejects.toBeInstanceOf(ConflictError);
    expect(await statusOf(launchId)).toBe('failed');
    expect(await queuedEvents(launchId)).toHaveLength(0);
    expect(woken).toEqual([]);
  });

  it('leaves the dead letter open when the launch is no longer failed', async () => {
    const { launchId, dl } = await failedLaunchWithDeadLetter();
    await tdb.db.updateTable('launches').set({ status: 'complete' }).where('id', '=', launchId).execute();
    await expect(retryDeadLetter(deps, dl)).rejects.toThrow(/is not failed/);
    expect((await getDeadLetter(tdb.db, dl.id))?.status).toBe('open');
  });

  it('queues the launch once when two retries race', async () => {
    const { launchId, dl } = await failedLaunchWithDeadLetter();
    const results = await Promise.allSettled([retryDeadLetter(deps, dl), retryDeadLetter(deps, dl)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(await queuedEvents(launchId)).toHaveLength(1);
  });
});
