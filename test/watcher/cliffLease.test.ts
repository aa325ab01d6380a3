import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { insertWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher, type WatchHandler } from '../../src/watcher/watcher.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';
import { transferHandler } from './support/transferHandler.js';

/**
 * The transfers watch with a scheduled check like the vesting cliff's (confirmed at once, keyed on
 * the address with instruction -1). `during` runs inside the check, before it returns: what another
 * watcher does while this pass makes its check.
 */
function withCliff(during: () => Promise<void>): WatchHandler {
  return {
    process: transferHandler.process,
    async scheduled(watch) {
      await during();
      return { events: [{ event: 'test.cliff_reached', signature: watch.address, instructionIndex: -1, data: { address: watch.address } }], confirmed: true };
    },
  };
}

// A cliff that passes during a pass is checked after the pass's history, under the same lease
// (docs/watcher.md, How it works): the check is reported in the same pass, and another instance
// cannot claim the watch in between; one that takes it over once the lease has expired reports the
// check itself, once. A cliff that had passed when the pass began is checked first.
describe('the scheduled check and the history, in one pass', () => {
  let t: TestDb;
  let chain: EmbeddedBackend;
  const sender = Keypair.generate();
  type ManualClock = ReturnType<typeof manualClock>;

  const transfer = async (to: PublicKey, lamports: number) => {
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: to, lamports }));
    tx.recentBlockhash = (await chain.getLatestBlockhash()).blockhash;
    tx.feePayer = sender.publicKey;
    tx.sign(sender);
    return chain.sendRawTransaction(tx.serialize());
  };
  /**
   * Two transfers into a new address, its watch with a cliff 1 s from now (the only watch due), and
   * the clock past the cliff: before the pass, or (`during`) once the pass has read the history.
   */
  const cliffWatch = async (clock: ManualClock, when: 'before' | 'during' = 'before') => {
    const address = Keypair.generate().publicKey;
    const signatures = [await transfer(address, 1_000_001), await transfer(address, 1_000_002)];
    const launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 8_000_000_000_000 }).execute();
    await insertWatches(t.db, { launchId, watches: [{ kind: 'transfers', address: address.toBase58(), context: {}, cliffAt: clock.now() + 1000 }], now: clock.now(), ttlMs: 86_400_000 });
    if (when === 'before') clock.advance(2000);
    return { signatures, launchId };
  };
  const reported = async (launchId: string) =>
    (await t.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute()).map((e) => ({
      event: e.event,
      signature: (JSON.parse(e.body) as { data: { signature?: string } }).data.signature,
    }));
  const watchOf = (launchId: string) => t.db.withTables<{ watches: WatchRow }>().selectFrom('watches').selectAll().where('launch_id', '=', launchId).executeTakeFirstOrThrow();
  const watcher = (clock: ManualClock, handler: WatchHandler, beforeCommit?: () => void) =>
    new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: chain.history, handlers: { transfers: handler }, signal: noopSignal, beforeCommit });

  beforeAll(async () => {
    t = await createTestDb();
    chain = await createEmbeddedBackend({ db: t.db, secretKey: Buffer.alloc(32, 9), clock: systemClock, logger: silentLogger() });
    await chain.requestAirdrop(sender.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
  });
  afterAll(async () => {
    await chain?.close();
    await t?.close();
  });

  it('reports a cliff that passes during the pass in the same pass as the history before it, after it, and gives the lease back', async () => {
    const clock = manualClock(Date.now());
    const { signatures, launchId } = await cliffWatch(clock, 'during');
    expect(await watcher(clock, withCliff(async () => undefined), () => clock.advance(2000)).runOnce()).toBe(3);
    expect(await reported(launchId)).toEqual([
      { event: 'test.transfer_received', signature: signatures[0] },
      { event: 'test.transfer_received', signature: signatures[1] },
      { event: 'test.cliff_reached', signature: undefined },
    ]);
    expect(await watchOf(launchId)).toMatchObject({ cursor: signatures[1], cliff_at: null, lease_owner: null, lease_expires_at: null, state: 'active' });
  });

  it('reports a cliff that had passed when the pass began before the history, in the same commit as its first batch', async () => {
    const clock = manualClock(Date.now() + 30_000);
    const { signatures, launchId } = await cliffWatch(clock);
    expect(await watcher(clock, withCliff(async () => undefined)).runOnce()).toBe(3);
    expect(await reported(launchId)).toEqual([
      { event: 'test.cliff_reached', signature: undefined },
      { event: 'test.transfer_received', signature: signatures[0] },
      { event: 'test.transfer_received', signature: signatures[1] },
    ]);
    expect(await watchOf(launchId)).toMatchObject({ cursor: signatures[1], cliff_at: null, lease_owner: null, lease_expires_at: null, state: 'active' });
  });

  it('holds the lease from the last history commit through the check: another watcher looking meanwhile finds nothing to claim', async () => {
    const clock = manualClock(Date.now() + 60_000);
    const { signatures, launchId } = await cliffWatch(clock, 'during');
    let rivalRecorded: number | undefined;
    const handler = withCliff(async () => {
      if (rivalRecorded !== undefined) return; // the rival's own check, if it got that far
      rivalRecorded = -1;
      rivalRecorded = await rival.runOnce();
    });
    const rival = watcher(clock, handler);
    const first = watcher(clock, handler, () => clock.advance(2000));
    expect(await first.runOnce()).toBe(3);
    expect(rivalRecorded).toBe(0);
    expect((await reported(launchId)).map((e) => e.event)).toEqual(['test.transfer_received', 'test.transfer_received', 'test.cliff_reached']);
    expect(await watchOf(launchId)).toMatchObject({ cursor: signatures[1], cliff_at: null, lease_owner: null });
  });

  it('a watcher that takes the watch over once the lease expired during the check reports the cliff itself, once; the late check commits nothing', async () => {
    const clock = manualClock(Date.now() + 120_000);
    const { launchId } = await cliffWatch(clock, 'during');
    let rivalRecorded: number | undefined;
    const handler = withCliff(async () => {
      if (rivalRecorded !== undefined) return;
      rivalRecorded = -1;
      // The check ran past the lease (a slow chain): the deadline is moved into the past, which is
      // the same to a claim on both databases (PostgreSQL compares it with its own clock).
      await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ lease_expires_at: 0 }).where('launch_id', '=', launchId).execute();
      rivalRecorded = await rival.runOnce();
    });
    const rival = watcher(clock, handler);
    const first = watcher(clock, handler, () => clock.advance(2000));
    expect(await first.runOnce()).toBe(2); // the history; its check's commit is refused (fenced)
    expect(rivalRecorded).toBe(1);
    expect((await reported(launchId)).map((e) => e.event)).toEqual(['test.transfer_received', 'test.transfer_received', 'test.cliff_reached']);
    expect(await watchOf(launchId)).toMatchObject({ cliff_at: null, lease_owner: null });
  });
});
