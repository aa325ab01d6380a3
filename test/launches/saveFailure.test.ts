import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { requeueFailedLaunch } from '../../src/launches/requeueLaunch.js';
import { systemClock } from '../../src/lib/clock.js';
import { readMintBack } from '../chain/support/readBack.js';
import { onPostgres, refuseInserts } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

// A step whose transactions landed and whose result the database then refuses. Simulated: a trigger
// on the real database (SQLite or PostgreSQL) that fails every `spend` entry of the funding ledger,
// as migration 042's unique index once refused the bench's replayed spends (commit c1b778e), so the
// step's completion transaction rolls back on every try. The chain, the runner and the launch are
// the real ones. Before, the run threw, the runner released the launch for 5 s, and every later run
// hit the same error: the launch stayed `processing` forever, with no event saying why.
describe('a step whose result cannot be saved', () => {
  it('fails the launch with result_not_saved, partialResults and a dead letter; retried once the database takes it, the step resumes from its recorded transactions and completes', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const db = t.service.db;
    await refuseInserts(db, 'funding_ledger', { column: 'kind', value: 'spend' });
    const id = await t.createLaunch(key, launchBody({ totalSupply: '1000000', decimals: 6 }));

    await t.service.runner.drain();
    const failed = await db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(failed.status).toBe('failed');
    expect(failed.lease_owner).toBeNull();
    const error = JSON.parse(failed.error!) as { code: string; step: string; message: string };
    expect(error).toMatchObject({ code: 'result_not_saved', step: 'create_mint' });
    expect(error.message).toContain('disk full');
    const events = await db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual(['launch.queued', 'launch.processing', 'launch.failed']);
    const partial = (JSON.parse(events.at(-1)!.body) as { data: { partialResults: { mint?: string } } }).data.partialResults;
    // The step's result is not lost: the mint it made is in partialResults, and on chain.
    expect(partial.mint).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    const landed = error.message.match(/landed \(([^)]+)\)/)![1]!.split(', ');
    expect(landed.length).toBeGreaterThan(0);
    const dead = await db.selectFrom('dead_letters').selectAll().where('launch_id', '=', id).executeTakeFirstOrThrow();
    expect(dead.error_code).toBe('result_not_saved');

    // The database takes spends again; the operator retries the dead letter.
    await sql.raw(onPostgres ? 'drop trigger refuse on funding_ledger' : 'drop trigger refuse').execute(db);
    await db.transaction().execute((trx) => requeueFailedLaunch(trx, systemClock, dead));
    await t.service.runner.drain();
    const done = await db.selectFrom('launches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(done.status).toBe('complete');
    const mintStep = await db.selectFrom('launch_steps').select('transactions').where('launch_id', '=', id).where('name', '=', 'create_mint').executeTakeFirstOrThrow();
    // The same transactions as the failed try reported: resumed from the record, nothing sent again.
    expect((JSON.parse(mintStep.transactions!) as Array<{ signature: string }>).map((tx) => tx.signature)).toEqual(landed);
    const { mint } = await readMintBack(t.service.chain, partial.mint!);
    expect(mint.supply).toBe(1_000_000n * 10n ** 6n);
    // Each transaction's spend is in the ledger once.
    const spends = await db.selectFrom('funding_ledger').select('signature').where('launch_id', '=', id).where('kind', '=', 'spend').execute();
    expect(new Set(spends.map((s) => s.signature)).size).toBe(spends.length);
    for (const signature of landed) expect(spends.map((s) => s.signature)).toContain(signature);
  });
});
