import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { retryDeadLetter } from '../../src/deadLetters/retry.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { ConflictError } from '../../src/lib/errors.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TransientError } from '../../src/lib/retry.js';
import { countWatchDeadLetters } from '../../src/metrics/sources.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { claimDueWatches, insertWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher, type WatchHandler } from '../../src/watcher/watcher.js';
import { onPostgres } from '../support/database.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';
import { transferHandler } from './support/transferHandler.js';

// A transaction a decoder cannot read (a program upgrade, a malformed instruction) is recorded once
// as a `watch` dead letter and skipped; the rest of the address's history is reported as usual.
describe('a transaction no decoder can read', () => {
  let t: TestDb;
  let chain: EmbeddedBackend;
  let launchId: string;
  const sender = Keypair.generate();
  const watched = Keypair.generate().publicKey;
  /** Transfers of these amounts make the decoder throw: poison for good, transient for a while. */
  const POISON = 13n;
  const TRANSIENT = 21n;
  let transientFails = true;
  const FUNDED = String(LAMPORTS_PER_SOL);

  const amountsOf = (tx: Parameters<WatchHandler['process']>[1][number]) =>
    tx.instructions.filter((ix) => ix.data.length === 12 && Buffer.from(ix.data).readUInt32LE(0) === 2).map((ix) => Buffer.from(ix.data).readBigUInt64LE(4));
  const decoder: WatchHandler = {
    async process(watch, transactions, history) {
      for (const tx of transactions) {
        if (amountsOf(tx).includes(POISON)) throw new RangeError('Trying to access beyond buffer length');
        if (amountsOf(tx).includes(TRANSIENT) && transientFails) throw new TransientError('rpc_unavailable', 'getAccountInfo: 503 Service Unavailable');
      }
      return transferHandler.process(watch, transactions, history);
    },
  };
  const transfer = async (lamports: bigint) => {
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: watched, lamports }));
    tx.recentBlockhash = (await chain.getLatestBlockhash()).blockhash;
    tx.feePayer = sender.publicKey;
    tx.sign(sender);
    return chain.sendRawTransaction(tx.serialize());
  };
  const received = async () =>
    (await t.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute())
      .filter((e) => e.event === 'test.transfer_received')
      .map((e) => (JSON.parse(e.body) as { data: { lamports: string } }).data.lamports);
  const watchRow = () => t.db.withTables<{ watches: WatchRow }>().selectFrom('watches').selectAll().where('launch_id', '=', launchId).executeTakeFirstOrThrow();
  const due = () => t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('launch_id', '=', launchId).execute();
  const watcher = () => new ChainWatcher({ db: t.db, clock: manualClock(Date.now() + 60_000), logger: silentLogger(), chain: chain.history, handlers: { transfers: decoder }, signal: noopSignal, pollIntervalMs: 1000, maxIntervalMs: 8000 });

  beforeAll(async () => {
    t = await createTestDb();
    chain = await createEmbeddedBackend({ db: t.db, secretKey: Buffer.alloc(32, 9), clock: systemClock, logger: silentLogger() });
    await chain.requestAirdrop(sender.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    // Rent-exempt first (a transfer of a few lamports into an empty account is refused).
    await chain.requestAirdrop(watched, BigInt(LAMPORTS_PER_SOL));
    launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await insertWatches(t.db, { launchId, watches: [{ kind: 'transfers', address: watched.toBase58(), context: {} }], now: Date.now(), ttlMs: 3600_000 });
  });
  afterAll(async () => {
    await chain?.close();
    await t?.close();
  });

  it('is recorded once as a watch dead letter and skipped; the transactions around it are reported in order', async () => {
    await transfer(5n);
    const poison = await transfer(POISON);
    const last = await transfer(8n);
    const w = watcher();
    await due();
    expect(await w.runOnce()).toBe(3);
    expect(await received()).toEqual([FUNDED, '5', '8']);
    expect((await watchRow()).cursor).toBe(last);
    const letters = await t.db.selectFrom('dead_letters').selectAll().where('launch_id', '=', launchId).execute();
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ kind: 'watch', step: 'transfers', error_code: 'undecodable_transaction', status: 'open' });
    expect(letters[0]!.error_message).toBe(`${poison}: Trying to access beyond buffer length`);
    expect(w.undecodable).toBe(1);
    expect(await countWatchDeadLetters(t.db)).toBe(1);

    // Later passes do not meet it again: one dead letter, however often the watch is checked.
    await transfer(9n);
    await due();
    expect(await w.runOnce()).toBe(1);
    await due();
    expect(await w.runOnce()).toBe(0);
    expect(await received()).toEqual([FUNDED, '5', '8', '9']);
    expect(await t.db.selectFrom('dead_letters').select('id').where('launch_id', '=', launchId).execute()).toHaveLength(1);

    // Nothing to retry: the transaction was skipped; an operator resolves it once reviewed.
    await expect(retryDeadLetter({ db: t.db, clock: systemClock, requeueLaunch: async () => undefined, redeliver: async () => undefined, wake: () => undefined }, letters[0]!)).rejects.toBeInstanceOf(ConflictError);
  });

  it('a chain that cannot be read is not a poison transaction: the pass is retried and nothing is skipped', async () => {
    const cursor = (await watchRow()).cursor;
    await transfer(TRANSIENT);
    const w = watcher();
    await due();
    expect(await w.runOnce()).toBe(0);
    expect((await watchRow()).cursor).toBe(cursor);
    expect(await t.db.selectFrom('dead_letters').select('id').where('launch_id', '=', launchId).execute()).toHaveLength(1);
    transientFails = false;
    await due();
    expect(await w.runOnce()).toBe(1);
    expect((await received()).at(-1)).toBe(String(TRANSIENT));
    expect(w.undecodable).toBe(0);
  });

  it.skipIf(onPostgres)('a long pass renews its lease with every batch, so no other watcher takes the watch over mid-pass', async () => {
    // (SQLite: leases run on the injected clock; on PostgreSQL on the server's, which a test cannot move.)
    const busy = Keypair.generate().publicKey;
    await chain.requestAirdrop(busy, BigInt(LAMPORTS_PER_SOL));
    for (let i = 0; i < 3; i++) {
      const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: busy, lamports: 100 + i }));
      tx.recentBlockhash = (await chain.getLatestBlockhash()).blockhash;
      tx.feePayer = sender.publicKey;
      tx.sign(sender);
      await chain.sendRawTransaction(tx.serialize());
    }
    const other = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await insertWatches(t.db, { launchId: other, watches: [{ kind: 'transfers', address: busy.toBase58(), context: {} }], now: Date.now(), ttlMs: 3600_000 });
    const clock = manualClock(Date.now() + 60_000);
    const takeovers: number[] = [];
    const w = new ChainWatcher({
      db: t.db,
      clock,
      logger: silentLogger(),
      chain: chain.history,
      handlers: { transfers: decoder },
      signal: noopSignal,
      pollIntervalMs: 2000,
      leaseMs: 3000,
      batchSize: 1,
      // Each batch takes 2.5 s, longer than the poll interval, so the watch is due again before each
      // commit; four of them outlast the first lease of 3 s. A rival watcher tries to claim before each.
      beforeCommit: async (watch) => {
        if (watch.launch_id !== other) return;
        clock.advance(2500);
        takeovers.push((await claimDueWatches(t.db, { owner: 'rival', now: clock.now(), leaseMs: 3000, limit: 16 })).filter((c) => c.launch_id === other).length);
      },
    });
    expect(await w.runOnce()).toBeGreaterThanOrEqual(4);
    expect(takeovers).toEqual([0, 0, 0, 0]);
    expect((await t.db.selectFrom('outbox_events').select('id').where('launch_id', '=', other).execute()).length).toBeGreaterThanOrEqual(4);
  });
});
