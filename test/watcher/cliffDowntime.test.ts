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

/** The transfer that ends the watch, as the last claim (everything claimed) or a close ends a vesting watch. */
const FINAL = 1_000_999;

/**
 * A vesting-style watch without program binaries: each transfer in is a claim, the FINAL one ends
 * the watch; the cliff is a scheduled check keyed like the vesting cliff (the address, instruction
 * -1), counted in `checks`.
 */
function vestingLike(checks: { count: number }): WatchHandler {
  return {
    async process(watch, transactions, chain) {
      const { events } = await transferHandler.process(watch, transactions, chain);
      const last = events.findIndex((e) => e.data.lamports === String(FINAL));
      return last < 0 ? { events } : { events: events.slice(0, last + 1), end: 'vesting_complete' };
    },
    async scheduled(watch) {
      checks.count += 1;
      return { events: [{ event: 'test.cliff_reached', signature: watch.address, instructionIndex: -1, data: { address: watch.address } }], confirmed: true };
    },
  };
}

// The service was down across the cliff, and meanwhile the holder claimed everything: the pass
// after the restart reads history that ends the watch. The cliff is still reported, once, before
// the claims (every claim follows the cliff on chain), and the watch then ends (docs/watcher.md).
describe('a cliff that passed while no pass ran, and history that ends the watch', () => {
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
  /** A new address's watch with a cliff 1 s from now (the only watch due), then its claims: `amounts`, the last one FINAL. */
  const downtime = async (clock: ManualClock, amounts: number[], passCliff = true) => {
    const address = Keypair.generate().publicKey;
    const launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 8_000_000_000_000 }).execute();
    await insertWatches(t.db, { launchId, watches: [{ kind: 'vesting', address: address.toBase58(), context: {}, cliffAt: clock.now() + 1000 }], now: clock.now(), ttlMs: 86_400_000 });
    const signatures: string[] = [];
    for (const lamports of [...amounts, FINAL]) signatures.push(await transfer(address, lamports));
    if (passCliff) clock.advance(60_000); // the downtime: the cliff passed, no pass ran
    return { signatures, launchId };
  };
  const reported = async (launchId: string) =>
    (await t.db.selectFrom('outbox_events').select(['event', 'sequence', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute()).map((e) => ({
      event: e.event,
      sequence: Number(e.sequence),
      signature: (JSON.parse(e.body) as { data: { signature?: string } }).data.signature,
    }));
  const watchOf = (launchId: string) => t.db.withTables<{ watches: WatchRow }>().selectFrom('watches').selectAll().where('launch_id', '=', launchId).executeTakeFirstOrThrow();
  const watcher = (clock: ManualClock, checks: { count: number }, options: { batchSize?: number; beforeCommit?: () => Promise<void> | void } = {}) =>
    new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: chain.history, handlers: { vesting: vestingLike(checks) }, signal: noopSignal, ...options });
  /** The events expected: the cliff, then each claim in order, numbered on from the launch's last. */
  const inOrder = (signatures: string[]) => [{ event: 'test.cliff_reached', signature: undefined }, ...signatures.map((signature) => ({ event: 'test.transfer_received', signature }))];
  const expectEnded = async (launchId: string, signatures: string[]) => {
    const events = await reported(launchId);
    expect(events.map(({ event, signature }) => ({ event, signature }))).toEqual(inOrder(signatures));
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => (events[0]?.sequence ?? 0) + i));
    expect(await watchOf(launchId)).toMatchObject({ state: 'ended', ended_reason: 'vesting_complete', cliff_at: null, lease_owner: null, cursor: signatures.at(-1) });
  };

  beforeAll(async () => {
    t = await createTestDb();
    chain = await createEmbeddedBackend({ db: t.db, secretKey: Buffer.alloc(32, 7), clock: systemClock, logger: silentLogger() });
    await chain.requestAirdrop(sender.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
  });
  afterAll(async () => {
    await chain?.close();
    await t?.close();
  });

  it('reports the cliff once, before the claims, in the pass that ends the watch; later passes report nothing', async () => {
    const clock = manualClock(Date.now());
    const checks = { count: 0 };
    const { signatures, launchId } = await downtime(clock, [1_000_001]);
    expect(await watcher(clock, checks).runOnce()).toBe(3);
    await expectEnded(launchId, signatures);
    expect(checks.count).toBe(1);
    // A repeated pass (this watcher or another instance) finds nothing due: the cliff stays reported once.
    clock.advance(60_000);
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('launch_id', '=', launchId).execute();
    expect(await watcher(clock, checks).runOnce()).toBe(0);
    expect(checks.count).toBe(1);
    await expectEnded(launchId, signatures);
  });

  it('carries the cliff in the first commit when the history takes several (one transaction a batch)', async () => {
    const clock = manualClock(Date.now() + 600_000);
    const checks = { count: 0 };
    const { signatures, launchId } = await downtime(clock, [1_000_001, 1_000_002]);
    const cliffAtCommit: Array<number | null> = [];
    const beforeCommit = async () => {
      cliffAtCommit.push((await watchOf(launchId)).cliff_at);
    };
    expect(await watcher(clock, checks, { batchSize: 1, beforeCommit }).runOnce()).toBe(4);
    await expectEnded(launchId, signatures);
    // The first batch's commit cleared the cliff with its event: the later batches found it gone.
    expect(cliffAtCommit.map((c) => c === null)).toEqual([false, true, true]);
    expect(checks.count).toBe(1);
  });

  it('a rival that takes the watch over when the first commit is refused reports the cliff itself, once', async () => {
    const clock = manualClock(Date.now() + 1_200_000);
    const checks = { count: 0 };
    const { signatures, launchId } = await downtime(clock, [1_000_001]);
    let rivalRecorded: number | undefined;
    const rival = watcher(clock, checks);
    const first = watcher(clock, checks, {
      beforeCommit: async () => {
        if (rivalRecorded !== undefined) return;
        rivalRecorded = -1;
        // The pass ran past its lease (a slow chain): the rival claims the watch and does the pass itself.
        await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ lease_expires_at: 0 }).where('launch_id', '=', launchId).execute();
        rivalRecorded = await rival.runOnce();
      },
    });
    expect(await first.runOnce()).toBe(0); // its commit, the cliff with the claims, is refused (fenced)
    expect(rivalRecorded).toBe(3);
    expect(checks.count).toBe(2); // each pass checked; the event keys let one report count
    await expectEnded(launchId, signatures);
  });

  it('a cliff that passes during a pass whose history ends the watch is reported in the commit that ends it, ahead of its claims', async () => {
    const clock = manualClock(Date.now() + 1_800_000);
    const checks = { count: 0 };
    const { signatures, launchId } = await downtime(clock, [1_000_001], false);
    // The history is read before the cliff; the clock passes it before the commit.
    expect(await watcher(clock, checks, { beforeCommit: () => clock.advance(60_000) }).runOnce()).toBe(3);
    await expectEnded(launchId, signatures);
    expect(checks.count).toBe(1);
  });
});
