import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer, type ChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { onPostgres, passLeaseTime } from '../support/database.js';
import { commitProgress, insertWatches, listWatches, wakeWatches, WatchFencedError, claimDueWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher } from '../../src/watcher/watcher.js';
import { MINT_SIZE, TOKEN_PROGRAM_ID, createAssociatedTokenAccountInstruction, createInitializeMint2Instruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import type { ChainHistory, HistoryTransaction } from '../../src/chain/history.js';
import { createEndpointPool } from '../../src/chain/rpc/endpoints.js';
import { createRpcHistory } from '../../src/chain/rpc/history.js';
import { allInstructions, INNER_KEY_BASE } from '../../src/watcher/decoders/instructions.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';
import { transferHandler } from './support/transferHandler.js';
import { fundingHandler } from '../../src/watcher/handlers.js';

const root = join(import.meta.dirname, '..', '..');

/** Runs the watcher worker process to its end (or until it pauses, when `pause`). */
function runWorker(env: Record<string, string>, pause: boolean) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support', 'watchWorker.ts')], {
    cwd: root,
    env: { ...process.env, ...env, WATCH_PAUSE: pause ? '1' : '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const line = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', resolve);
    void exited.then(() => reject(new Error(`worker exited without output: ${stderr}`)));
  });
  return { child, line, exited };
}

// The watcher's cursor, backfill, dedupe and restart logic on the embedded chain, with the only
// transactions it can make without extra programs: system transfers into a watched address.
describe('chain watcher on the embedded chain', () => {
  let t: TestDb;
  let chain: EmbeddedBackend;
  let server: ChainRpcServer;
  let connection: Connection;
  let launchId: string;
  const sender = Keypair.generate();
  const watched = Keypair.generate().publicKey;

  // The embedded chain has processed a transaction when sendTransaction answers (the local-cluster
  // test covers confirmTransaction over PubSub); here a status read is enough.
  const send = async (tx: Transaction) => {
    const signature = await connection.sendTransaction(tx, [sender]);
    expect((await connection.getSignatureStatus(signature)).value?.err).toBeNull();
    return signature;
  };
  const transfer = async (lamports: number, to: PublicKey = watched) => send(new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: to, lamports })));
  const events = async () =>
    (await t.db.selectFrom('outbox_events').select(['event', 'sequence', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute())
      .filter((e) => e.event === 'test.transfer_received')
      .map((e) => ({ sequence: e.sequence, data: (JSON.parse(e.body) as { data: { signature: string; lamports: string } }).data }));
  const watchRow = async () => (await t.db.withTables<{ watches: WatchRow }>().selectFrom('watches').selectAll().where('launch_id', '=', launchId).executeTakeFirstOrThrow());
  const inProcessWatcher = (clock = systemClock) =>
    new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: chain.history, handlers: { transfers: transferHandler }, signal: noopSignal, pollIntervalMs: 1000, maxIntervalMs: 8000 });

  beforeAll(async () => {
    t = await createTestDb();
    chain = await createEmbeddedBackend({ db: t.db, secretKey: Buffer.alloc(32, 5), clock: systemClock, logger: silentLogger() });
    server = await startChainRpcServer({ chain, host: '127.0.0.1', port: 0, logger: silentLogger() });
    connection = new Connection(server.url, 'confirmed');
    await chain.requestAirdrop(sender.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await insertWatches(t.db, { launchId, watches: [{ kind: 'transfers', address: watched.toBase58(), context: {} }], now: Date.now(), ttlMs: 3600_000 });
  });
  afterAll(async () => {
    await server?.close();
    await chain?.close();
    await t?.close();
  });

  it('loses nothing and reports nothing twice across a SIGKILL between reading history and committing, then backfills', async () => {
    const sigs = [await transfer(1_000_001), await transfer(1_000_002)];
    // A failed transaction to the watched address: in its history, but it emits nothing.
    const failing = new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: watched, lamports: 1000 * LAMPORTS_PER_SOL }));
    const failedSig = await connection.sendTransaction(failing, [sender], { skipPreflight: true });
    sigs.push(await transfer(1_000_003));
    expect((await connection.getSignaturesForAddress(watched)).map((s) => s.signature)).toContain(failedSig);

    const env = { DB_PATH: t.path, RPC_URL: server.url, WATCH_BATCH: '2' };
    const killed = runWorker(env, true);
    expect(await killed.line).toBe('paused');
    killed.child.kill('SIGKILL');
    expect((await killed.exited).signal).toBe('SIGKILL');
    expect(await events()).toEqual([]);
    expect((await watchRow()).cursor).toBeNull();

    // Downtime: two more transfers land while no watcher runs.
    sigs.push(await transfer(1_000_004), await transfer(1_000_005));
    // The dead worker's lease (1 s) expires: the next worker's clock runs 2 s ahead (SQLite leases
    // follow it); on PostgreSQL leases follow the database clock (docs/architecture.md, SQLite and PostgreSQL), so passLeaseTime moves
    // the deadline 2 s into the past instead of waiting for it.
    const workerClock = { offsetMs: 0, advance: (ms: number) => (workerClock.offsetMs += ms) };
    await passLeaseTime(t.db, workerClock, 2000);
    const resumed = runWorker({ ...env, CLOCK_OFFSET_MS: String(workerClock.offsetMs) }, false);
    expect(await resumed.line).toBe('done 5');
    const got = await events();
    expect(got.map((e) => e.data.signature)).toEqual(sigs);
    expect(got.map((e) => e.data.lamports)).toEqual(['1000001', '1000002', '1000003', '1000004', '1000005']);
    expect(new Set(got.map((e) => e.sequence)).size).toBe(5);
    expect((await watchRow()).cursor).toBe(sigs[4]);
  }, 60_000);

  it('replaying from an old cursor reports nothing twice; new activity is reported once, in order', async () => {
    const before = (await events()).length;
    const watcher = inProcessWatcher(manualClock(Date.now() + 60_000));
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ cursor: null, next_check_at: 0, lease_owner: null }).where('launch_id', '=', launchId).execute();
    expect(await watcher.runOnce()).toBe(0);
    expect((await events()).length).toBe(before);

    const other = Keypair.generate().publicKey;
    const next = await send(
      new Transaction().add(
        SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: other, lamports: LAMPORTS_PER_SOL / 100 }),
        SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: watched, lamports: 6 }),
        SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: watched, lamports: 7 }),
      ),
    );
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('launch_id', '=', launchId).execute();
    expect(await watcher.runOnce()).toBe(2);
    const got = (await events()).slice(before);
    expect(got.map((e) => [e.data.signature, e.data.lamports])).toEqual([
      [next, '6'],
      [next, '7'],
    ]);
    const [view] = await listWatches(t.db, launchId);
    expect(view).toMatchObject({ kind: 'transfers', address: watched.toBase58(), state: 'active', cursor: next });
    expect(view?.lastActivityAt).not.toBeNull();
  });

  it('polls an idle watch less and less often (capped), and often again after activity', async () => {
    const clock = manualClock(Date.now() + 120_000);
    const watcher = inProcessWatcher(clock);
    const intervals: number[] = [];
    for (let i = 0; i < 6; i++) {
      await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('launch_id', '=', launchId).execute();
      await watcher.runOnce();
      intervals.push(Number((await watchRow()).interval_ms));
    }
    expect(intervals).toEqual([2000, 4000, 8000, 8000, 8000, 8000]);
    const row = await watchRow();
    expect(Number(row.next_check_at)).toBe(clock.now() + 8000);
    await transfer(42);
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('launch_id', '=', launchId).execute();
    expect(await watcher.runOnce()).toBe(1);
    expect(Number((await watchRow()).interval_ms)).toBe(1000);
    // Not due: nothing is read.
    const reads = watcher.reads;
    expect(await watcher.runOnce()).toBe(0);
    expect(watcher.reads).toBe(reads);
  });

  it('a wake-up from the chain makes an idle watch due at once, however long its interval has grown; without one it waits', async () => {
    const clock = manualClock(Date.now() + 200_000);
    const idle = async () =>
      t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ interval_ms: 600_000, next_check_at: clock.now() + 600_000, lease_owner: null }).where('launch_id', '=', launchId).execute();
    await idle();
    // A backend without a wake-up source (as RPC today): the transfer waits for the watch's own next check.
    const { onActivity: _, ...withoutWakeUps } = chain.history;
    const polling = new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: withoutWakeUps, handlers: { transfers: transferHandler }, signal: noopSignal });
    const woken = inProcessWatcher(clock);
    expect(await woken.runOnce()).toBe(0);
    const reads = woken.reads;
    await transfer(LAMPORTS_PER_SOL / 100, Keypair.generate().publicKey); // activity elsewhere: a hint that matches no watch
    expect(await woken.runOnce()).toBe(0);
    expect(woken.reads).toBe(reads);
    expect(Number((await watchRow()).next_check_at)).toBe(clock.now() + 600_000);

    const signature = await transfer(44);
    expect(await polling.runOnce()).toBe(0);
    expect(await woken.runOnce()).toBe(1);
    expect((await events()).at(-1)?.data).toMatchObject({ signature, lamports: '44' });
    await polling.stop();
    await woken.stop();
  });

  it('a wake-up that lands during a pass (after it read history, before it commits) survives the commit: the watch stays due', async () => {
    const clock = manualClock(Date.now() + 250_000);
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ interval_ms: 600_000, next_check_at: 0, lease_owner: null }).where('launch_id', '=', launchId).execute();
    // The pass reads one failed transaction (it emits nothing, so the idle watch's interval stays at
    // its 10 min cap); while it holds the lease, a transfer lands and another instance that saw it
    // wakes the watch. This watcher has no wake-up source of its own, so only that wake-up counts.
    const failing = new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: watched, lamports: 1000 * LAMPORTS_PER_SOL }));
    const failedSig = await connection.sendTransaction(failing, [sender], { skipPreflight: true });
    expect((await connection.getSignatureStatus(failedSig)).value?.err).not.toBeNull();
    const { onActivity: _, ...withoutWakeUps } = chain.history;
    let during: string | undefined;
    let woken = 0;
    const watcher = new ChainWatcher({
      db: t.db,
      clock,
      logger: silentLogger(),
      chain: withoutWakeUps,
      handlers: { transfers: transferHandler },
      signal: noopSignal,
      maxIntervalMs: 600_000,
      beforeCommit: async () => {
        if (during !== undefined) return;
        during = await transfer(46);
        woken = await wakeWatches(t.db, [watched.toBase58()], clock.now());
      },
    });
    expect(await watcher.runOnce()).toBe(0);
    const afterPass = await watchRow();
    expect(Number(afterPass.interval_ms)).toBe(600_000);
    expect(Number(afterPass.next_check_at)).toBeLessThanOrEqual(clock.now());
    expect(woken).toBe(1);
    // The next turn, with no time passing, reports the transfer.
    expect(await watcher.runOnce()).toBe(1);
    expect((await events()).at(-1)?.data).toMatchObject({ signature: during, lamports: '46' });
    // The wake-up is spent: the watch is back on its own schedule (2 s after activity).
    const settled = await watchRow();
    expect(settled.woken_at).toBeNull();
    expect(Number(settled.next_check_at)).toBe(clock.now() + 2000);
    expect(await watcher.runOnce()).toBe(0);
    await watcher.stop();
  });

  it('both backends read the instructions a transaction invoked (CPI) alike: the embedded index and the RPC cursor poller', async () => {
    // The associated-token program (built into the chain) creates the account by invoking the system and token programs.
    const mint = Keypair.generate();
    const rent = await connection.getMinimumBalanceForRentExemption(MINT_SIZE);
    await connection.sendTransaction(
      new Transaction().add(
        SystemProgram.createAccount({ fromPubkey: sender.publicKey, newAccountPubkey: mint.publicKey, space: MINT_SIZE, lamports: rent, programId: TOKEN_PROGRAM_ID }),
        createInitializeMint2Instruction(mint.publicKey, 0, sender.publicKey, null),
      ),
      [sender, mint],
    );
    const owner = Keypair.generate().publicKey;
    const signature = await send(new Transaction().add(createAssociatedTokenAccountInstruction(sender.publicKey, getAssociatedTokenAddressSync(mint.publicKey, owner), owner, mint.publicKey)));
    const plain = (tx: HistoryTransaction | null) => tx?.innerInstructions.map((e) => ({ index: e.index, instructions: e.instructions.map((ix) => ({ ...ix, data: Buffer.from(ix.data).toString('hex') })) }));
    const embedded = plain(await chain.history.getTransaction(signature));
    const rpc = plain(await createRpcHistory(createEndpointPool([server.url]).read).getTransaction(signature));
    expect(embedded?.[0]?.index).toBe(0);
    expect(embedded?.[0]?.instructions.map((ix) => ix.programId)).toEqual(expect.arrayContaining([SystemProgram.programId.toBase58(), TOKEN_PROGRAM_ID.toBase58()]));
    expect(rpc).toEqual(embedded);
    // Keys: the top-level instruction, then what it invoked, past every top-level index.
    const keys = allInstructions((await chain.history.getTransaction(signature)) as HistoryTransaction).map((k) => [k.key, k.inner]);
    expect(keys[0]).toEqual([0, false]);
    expect(keys.slice(1)).toEqual(embedded?.[0]?.instructions.map((_, k) => [INNER_KEY_BASE + k, true]));
  });

  it('refuses a commit by a watcher whose lease was taken over (fencing token), and ends a watch after its TTL', async () => {
    const now = Date.now() + 300_000;
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0, lease_owner: null }).where('launch_id', '=', launchId).execute();
    const [first] = await claimDueWatches(t.db, { owner: 'a', now, leaseMs: 1000, limit: 1 });
    // The lease expires: on SQLite the lease clock jumps past it; on PostgreSQL leases run on the
    // database clock (docs/architecture.md, SQLite and PostgreSQL), so the row's deadline is moved into the past instead.
    if (onPostgres) await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ lease_expires_at: 0 }).where('launch_id', '=', launchId).execute();
    const [second] = await claimDueWatches(t.db, { owner: 'b', now: now + 2000, leaseMs: 1000, limit: 1 });
    expect(first && second && second.fence).toBe(Number(first?.fence) + 1);
    const stale = commitProgress(t.db, systemClock, first as WatchRow, { events: [{ event: 'test.transfer_received', data: {}, signature: 'stale', instructionIndex: 0 }], cursor: 'stale', nextCheckAt: 0, intervalMs: 1, activity: true });
    await expect(stale).rejects.toBeInstanceOf(WatchFencedError);
    expect((await watchRow()).cursor).not.toBe('stale');
    await commitProgress(t.db, systemClock, second as WatchRow, { events: [], cursor: (second as WatchRow).cursor, nextCheckAt: 0, intervalMs: 1000, activity: false });

    const watcher = inProcessWatcher(manualClock(Date.now() + 2 * 3600_000));
    await watcher.runOnce();
    expect(await watchRow()).toMatchObject({ state: 'ended', ended_reason: 'ttl' });
  });

  it('reads a funding wallet through balancesAt: one batched read, nothing decoded, the events whole transactions give', async () => {
    // The wallet's own spend (it is the fee payer) is no deposit, a failed transfer is nothing, two
    // transfers in one transaction are one deposit of their sum.
    const wallet = Keypair.generate();
    const deposit = await transfer(5_000_000, wallet.publicKey);
    const spend = await connection.sendTransaction(new Transaction().add(SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 })), [wallet]);
    expect((await connection.getSignatureStatus(spend)).value?.err).toBeNull();
    const failed = await connection.sendTransaction(new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: wallet.publicKey, lamports: 1000 * LAMPORTS_PER_SOL })), [sender], { skipPreflight: true });
    const twice = await send(
      new Transaction().add(
        SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: wallet.publicKey, lamports: 7 }),
        SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: wallet.publicKey, lamports: 8 }),
      ),
    );
    const walletLaunch = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await insertWatches(t.db, { launchId: walletLaunch, watches: [{ kind: 'funding', address: wallet.publicKey.toBase58(), context: {} }], now: Date.now(), ttlMs: 3600_000 });

    let decoded = 0;
    let batched = 0;
    const counted: ChainHistory = {
      ...chain.history,
      getTransaction: (signature) => ((decoded += 1), chain.history.getTransaction(signature)),
      balancesAt: (address, signatures) => ((batched += 1), chain.history.balancesAt(address, signatures)),
    };
    const watcher = new ChainWatcher({ db: t.db, clock: manualClock(Date.now() + 1000), logger: silentLogger(), chain: counted, handlers: { transfers: transferHandler, funding: fundingHandler }, signal: noopSignal });
    expect(await watcher.runOnce()).toBe(2);
    expect(decoded).toBe(0);
    expect(batched).toBe(1);
    const reported = (await t.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', walletLaunch).where('event', '=', 'funding.deposit_received').orderBy('sequence').execute()).map((e) => (JSON.parse(e.body) as { data: Record<string, string> }).data);
    expect(reported.map((d) => [d.signature, d.lamports, d.balanceLamports])).toEqual([
      [deposit, '5000000', '5000000'],
      [twice, '15', String(5_000_000 - 1_000_000 - 5000 + 15)],
    ]);
    // The same events as the handler makes of the whole transactions (as on an RPC cluster).
    const whole = await Promise.all([deposit, spend, twice].map(async (s) => (await chain.history.getTransaction(s)) as HistoryTransaction));
    const view = { id: 'w', launchId: walletLaunch, kind: 'funding', address: wallet.publicKey.toBase58(), context: {}, cliffAt: null };
    const fromWhole = await fundingHandler.process(view, whole, chain.history);
    expect(fromWhole.events.map((e) => e.data)).toEqual(reported);
    expect((await chain.history.balancesAt(wallet.publicKey.toBase58(), [failed]))[0]?.err).not.toBeNull();
  });
});
