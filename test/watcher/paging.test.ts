import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer, type ChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import type { ChainHistory } from '../../src/chain/history.js';
import { createEndpointPool } from '../../src/chain/rpc/endpoints.js';
import { createRpcHistory } from '../../src/chain/rpc/history.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TransientError } from '../../src/lib/retry.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { claimDueWatches, insertWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher } from '../../src/watcher/watcher.js';
import { onPostgres, passLeaseTime } from '../support/database.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';
import { transferHandler } from './support/transferHandler.js';

/** The watcher worker process (test/watcher/support/watchWorker.ts): its first output line and its exit. */
function runWorker(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support', 'watchWorker.ts')], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, ...env },
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

/** One read the watcher made through the JSON-RPC history: a page of signatures, or a transaction. */
type Read = { page: { limit: number; before: string | undefined; until: string | undefined; got: string[] } } | { tx: string };

/**
 * The RPC backend's history over the embedded chain's JSON-RPC, recording every read; `failPage`
 * may refuse a page read (an RPC outage part way through a pass).
 */
function recorded(inner: ChainHistory, reads: Read[], failPage: () => boolean = () => false): ChainHistory {
  return {
    ...inner,
    async signaturesForAddress(address, options) {
      if (failPage()) throw new TransientError('rpc_unavailable', 'getSignaturesForAddress: 503 Service Unavailable');
      const list = await inner.signaturesForAddress(address, options);
      reads.push({ page: { limit: options.limit, before: options.before, until: options.until, got: list.map((s) => s.signature) } });
      return list;
    },
    async getTransaction(signature) {
      reads.push({ tx: signature });
      return inner.getTransaction(signature);
    },
  };
}

const pagesOf = (reads: Read[]) => reads.flatMap((r) => ('page' in r ? [r.page] : []));
const txsOf = (reads: Read[]) => reads.flatMap((r) => ('tx' in r ? [r.tx] : []));

/**
 * Every transaction read is one of the signatures the page read just before it returned, or of the
 * pass's newest page (read first, with no `before`, and reported last): the two pages a pass holds.
 */
function readsFromHeldPages(reads: Read[]): boolean {
  let latest = new Set<string>();
  let newest = new Set<string>();
  for (const r of reads) {
    if ('page' in r) {
      latest = new Set(r.page.got);
      if (r.page.before === undefined) newest = latest;
    } else if (!latest.has(r.tx) && !newest.has(r.tx)) return false;
  }
  return true;
}

// The watcher pages through an address's history (docs/architecture.md, The chain watcher):
// it holds at most two pages of signatures (the newest, reported last, and the current one), reports oldest first, and a pass that stops part way
// resumes at the next page. The history is read over the embedded chain's JSON-RPC, as on a cluster.
describe('a backlog longer than several pages', () => {
  let t: TestDb;
  let chain: EmbeddedBackend;
  let server: ChainRpcServer;
  let rpc: ChainHistory;
  const sender = Keypair.generate();
  const PAGE = 5;
  const BACKLOG = 23;

  const transfer = async (to: PublicKey, lamports: number) => {
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: to, lamports }));
    tx.recentBlockhash = (await chain.getLatestBlockhash()).blockhash;
    tx.feePayer = sender.publicKey;
    tx.sign(sender);
    return chain.sendRawTransaction(tx.serialize());
  };
  /** A watched address with `count` transfers into it (1 000 001, 1 000 002, … lamports), and its watch. */
  const backlog = async (count: number) => {
    const address = Keypair.generate().publicKey;
    const signatures: string[] = [];
    for (let i = 1; i <= count; i++) signatures.push(await transfer(address, 1_000_000 + i));
    const launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await insertWatches(t.db, { launchId, watches: [{ kind: 'transfers', address: address.toBase58(), context: {} }], now: Date.now(), ttlMs: 86_400_000 });
    return { address, signatures, launchId };
  };
  const reported = async (launchId: string) =>
    (await t.db.selectFrom('outbox_events').select(['event', 'sequence', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute())
      .filter((e) => e.event === 'test.transfer_received')
      .map((e) => ({ sequence: Number(e.sequence), ...(JSON.parse(e.body) as { data: { signature: string; lamports: string } }).data }));
  const watchOf = (launchId: string) => t.db.withTables<{ watches: WatchRow }>().selectFrom('watches').selectAll().where('launch_id', '=', launchId).executeTakeFirstOrThrow();
  const makeDue = (launchId: string) => t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('launch_id', '=', launchId).execute();
  /** Only this test's watch is due: the others in the database are pushed far out. */
  const onlyDue = async (launchId: string) => {
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 8_000_000_000_000 }).where('launch_id', '!=', launchId).execute();
    await makeDue(launchId);
  };
  const watcher = (history: ChainHistory, extra: Partial<ConstructorParameters<typeof ChainWatcher>[0]> = {}) =>
    new ChainWatcher({ db: t.db, clock: manualClock(Date.now() + 60_000), logger: silentLogger(), chain: history, handlers: { transfers: transferHandler }, signal: noopSignal, pageLimit: PAGE, batchSize: 2, ...extra });
  const lamportsOf = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => String(1_000_001 + from + i));

  beforeAll(async () => {
    t = await createTestDb();
    chain = await createEmbeddedBackend({ db: t.db, secretKey: Buffer.alloc(32, 11), clock: systemClock, logger: silentLogger() });
    server = await startChainRpcServer({ chain, host: '127.0.0.1', port: 0, logger: silentLogger() });
    rpc = createRpcHistory(createEndpointPool([server.url]).read);
    await chain.requestAirdrop(sender.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
  });
  afterAll(async () => {
    await server?.close();
    await chain?.close();
    await t?.close();
  });

  it('is reported once each, oldest first, while the watcher holds at most two pages of it', async () => {
    const { signatures, launchId } = await backlog(BACKLOG);
    const reads: Read[] = [];
    const w = watcher(recorded(rpc, reads));
    await onlyDue(launchId);
    expect(await w.runOnce()).toBe(BACKLOG);

    const got = await reported(launchId);
    expect(got.map((e) => e.signature)).toEqual(signatures);
    expect(got.map((e) => e.lamports)).toEqual(lamportsOf(0, BACKLOG));
    expect(new Set(got.map((e) => e.sequence)).size).toBe(BACKLOG);
    expect((await watchOf(launchId)).cursor).toBe(signatures.at(-1));

    // Every history read asked for one page, and every transaction read came from the page read just
    // before it or from the newest page: the watcher held two pages of signatures at most, never the whole backlog.
    const pages = pagesOf(reads);
    expect(pages.every((p) => p.limit === PAGE && p.got.length <= PAGE)).toBe(true);
    expect(readsFromHeldPages(reads)).toBe(true);
    expect(w.heldPeak).toBeLessThanOrEqual(2 * PAGE);
    // Each transaction read once, in chain order.
    expect(txsOf(reads)).toEqual(signatures);
    // Down from the newest to the oldest page (5 reads) and back up (3; the newest page is kept): two reads per page at most.
    expect(pages.length).toBeLessThanOrEqual(2 * Math.ceil(BACKLOG / PAGE));
    // A committed page is on the database before the next one is read: the cursor moved page by page
    // (the newest page, read first, is reported from memory once the one below it is committed).
    expect(pages.filter((p) => p.until !== undefined).map((p) => p.until)).toEqual(expect.arrayContaining([signatures[2], signatures[7], signatures[12]]));
  });

  it('a pass that fails after two pages resumes at the third: no event twice, none missing', async () => {
    const { signatures, launchId } = await backlog(BACKLOG);
    // Newest first in pages of 5, the oldest page holds 3 (23 = 3 + 4 × 5): after two pages, 8 are committed.
    const reads: Read[] = [];
    const w = watcher(
      recorded(rpc, reads, () => txsOf(reads).length >= 8),
      { batchSize: PAGE },
    );
    await onlyDue(launchId);
    expect(await w.runOnce()).toBe(8);
    expect((await reported(launchId)).map((e) => e.signature)).toEqual(signatures.slice(0, 8));
    expect((await watchOf(launchId)).cursor).toBe(signatures[7]);
    expect(w.heldPeak).toBeLessThanOrEqual(2 * PAGE);

    const resumedReads: Read[] = [];
    const resumed = watcher(recorded(rpc, resumedReads), { batchSize: PAGE });
    await onlyDue(launchId);
    expect(await resumed.runOnce()).toBe(BACKLOG - 8);
    // It reads from the third page on: nothing of the first two again, nothing skipped.
    expect(txsOf(resumedReads)).toEqual(signatures.slice(8));
    expect(pagesOf(resumedReads).every((p) => p.until === undefined || signatures.indexOf(p.until) >= 7)).toBe(true);
    const got = await reported(launchId);
    expect(got.map((e) => e.signature)).toEqual(signatures);
    expect(got.map((e) => e.lamports)).toEqual(lamportsOf(0, BACKLOG));
    expect(new Set(got.map((e) => e.sequence)).size).toBe(BACKLOG);
  });

  it('a watcher process killed (SIGKILL) after two pages of a backlog: the next process resumes at the third, nothing twice, nothing missing', async () => {
    const { signatures, launchId } = await backlog(BACKLOG);
    await onlyDue(launchId);
    const env = { DB_PATH: t.path, RPC_URL: server.url, WATCH_BATCH: String(PAGE), WATCH_PAGE: String(PAGE) };
    // Paused before its third commit (pages of 3 and 5 committed), then killed.
    const killed = runWorker({ ...env, WATCH_PAUSE: '1', WATCH_PAUSE_AT: '3' });
    try {
      expect(await killed.line).toBe('paused');
    } finally {
      killed.child.kill('SIGKILL');
    }
    expect((await killed.exited).signal).toBe('SIGKILL');
    expect((await reported(launchId)).map((e) => e.signature)).toEqual(signatures.slice(0, 8));
    expect((await watchOf(launchId)).cursor).toBe(signatures[7]);

    // The dead worker's lease (1 s) runs out: the next worker's clock runs 2 s ahead (on PostgreSQL the deadline moves back instead).
    const workerClock = { offsetMs: 0, advance: (ms: number) => (workerClock.offsetMs += ms) };
    await passLeaseTime(t.db, workerClock, 2000);
    const resumed = runWorker({ ...env, WATCH_PAUSE: '0', CLOCK_OFFSET_MS: String(workerClock.offsetMs) });
    expect(await resumed.line).toBe(`done ${BACKLOG - 8}`);
    await resumed.exited;
    const got = await reported(launchId);
    expect(got.map((e) => e.signature)).toEqual(signatures);
    expect(got.map((e) => e.lamports)).toEqual(lamportsOf(0, BACKLOG));
    expect(new Set(got.map((e) => e.sequence)).size).toBe(BACKLOG);
  }, 60_000);

  it('a pass whose lease is lost after two pages commits nothing more; the watcher that took it over resumes at the third page', async () => {
    const { signatures, launchId } = await backlog(BACKLOG);
    const rivalReads: Read[] = [];
    const rivalClock = manualClock(Date.now() + 10 * 60_000);
    const rival = new ChainWatcher({ db: t.db, clock: rivalClock, logger: silentLogger(), chain: recorded(rpc, rivalReads), handlers: { transfers: transferHandler }, signal: noopSignal, pageLimit: PAGE, batchSize: PAGE });
    let commits = 0;
    let rivalRecorded = -1;
    const stale = watcher(rpc, {
      batchSize: PAGE,
      // Before committing the third page, the lease runs out (the process froze) and another watcher
      // claims the watch and works through the rest of the backlog.
      beforeCommit: async (watch) => {
        if (watch.launch_id !== launchId || ++commits !== 3) return;
        // SQLite leases follow the rival's clock (10 min ahead); PostgreSQL's the server's, so the deadline is moved instead.
        if (onPostgres) await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ lease_expires_at: 0 }).where('launch_id', '=', launchId).execute();
        await makeDue(launchId);
        rivalRecorded = await rival.runOnce();
      },
    });
    await onlyDue(launchId);
    expect(await stale.runOnce()).toBe(8);
    expect(rivalRecorded).toBe(BACKLOG - 8);
    expect(txsOf(rivalReads)).toEqual(signatures.slice(8));
    const got = await reported(launchId);
    expect(got.map((e) => e.signature)).toEqual(signatures);
    expect(new Set(got.map((e) => e.sequence)).size).toBe(BACKLOG);
    expect((await watchOf(launchId)).cursor).toBe(signatures.at(-1));
  });

  it('activity during a long pass is left to the next pass, which reports it in order, even when the walk keeps only two page edges', async () => {
    const { address, signatures, launchId } = await backlog(BACKLOG);
    const reads: Read[] = [];
    let commits = 0;
    const w = watcher(recorded(rpc, reads), {
      maxPageMarks: 2,
      batchSize: PAGE,
      // After the first committed page, 7 more transfers land on the watched address.
      beforeCommit: async (watch) => {
        if (watch.launch_id !== launchId || ++commits !== 1) return;
        for (let i = 0; i < 7; i++) signatures.push(await transfer(address, 1_000_000 + BACKLOG + 1 + i));
      },
    });
    await onlyDue(launchId);
    // The pass reports the backlog it saw at its start (the newest is read once per pass) ...
    expect(await w.runOnce()).toBe(BACKLOG);
    expect((await reported(launchId)).map((e) => e.signature)).toEqual(signatures.slice(0, BACKLOG));
    expect(pagesOf(reads).filter((p) => p.before === undefined)).toHaveLength(1);
    // ... and the next pass what landed meanwhile, after it, in order.
    await onlyDue(launchId);
    expect(await w.runOnce()).toBe(7);
    const got = await reported(launchId);
    expect(got.map((e) => e.signature)).toEqual(signatures);
    expect(got.map((e) => e.lamports)).toEqual(lamportsOf(0, BACKLOG + 7));
    expect(new Set(got.map((e) => e.sequence)).size).toBe(BACKLOG + 7);
    expect(txsOf(reads)).toEqual(signatures);
    expect(readsFromHeldPages(reads)).toBe(true);
    expect(w.heldPeak).toBeLessThanOrEqual(2 * PAGE);
  });

  it('steady activity on a watched address does not keep its pass going: the pass ends with the backlog it saw, and a watch claimed with it is processed in the same turn', async () => {
    // A busy pool: a backlog of 12 in pages of 5, and one more transfer landing after each history
    // read of it, 40 in all. A second watch is due in the same turn, after it.
    const busy = await backlog(12);
    const quiet = await backlog(2);
    const LANDINGS = 40;
    let landed = 0;
    let busyReadsBeforeQuiet: number | undefined;
    let landingsBeforeQuiet: number | undefined;
    const reads: Read[] = [];
    const history: ChainHistory = {
      ...rpc,
      async signaturesForAddress(address, options) {
        const page = await rpc.signaturesForAddress(address, options);
        if (address === busy.address.toBase58()) {
          if (landed < LANDINGS) {
            landed += 1;
            busy.signatures.push(await transfer(busy.address, 1_000_000 + busy.signatures.length + 1));
          }
        } else if (address === quiet.address.toBase58() && busyReadsBeforeQuiet === undefined) {
          busyReadsBeforeQuiet = pagesOf(reads).length;
          landingsBeforeQuiet = landed;
        }
        return page;
      },
    };
    const w = watcher(recorded(history, reads));
    const both = async () => {
      await onlyDue(busy.launchId);
      await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 1 }).where('launch_id', '=', quiet.launchId).execute();
    };
    await both();
    await w.runOnce();
    // The busy pass ended within a bounded number of reads (down 3 pages, back up 2) while transfers
    // were still landing, and the quiet watch was processed in the same turn.
    expect(busyReadsBeforeQuiet).toBeDefined();
    expect(busyReadsBeforeQuiet).toBeLessThanOrEqual(2 * Math.ceil(12 / PAGE));
    expect(landingsBeforeQuiet).toBeLessThan(LANDINGS);
    expect((await reported(quiet.launchId)).map((e) => e.signature)).toEqual(quiet.signatures);
    expect((await reported(busy.launchId)).map((e) => e.signature)).toEqual(busy.signatures.slice(0, 12));

    // The next passes catch up with what landed meanwhile; once the transfers stop, every one is reported once, in order.
    for (let turn = 0; turn < 40; turn++) {
      await both();
      if ((await w.runOnce()) === 0 && landed === LANDINGS) break;
    }
    expect(landed).toBe(LANDINGS);
    const got = await reported(busy.launchId);
    expect(got.map((e) => e.signature)).toEqual(busy.signatures);
    expect(got.map((e) => e.lamports)).toEqual(lamportsOf(0, 12 + LANDINGS));
    expect(new Set(got.map((e) => e.sequence)).size).toBe(12 + LANDINGS);
    expect((await watchOf(busy.launchId)).cursor).toBe(busy.signatures.at(-1));
    expect(w.heldPeak).toBeLessThanOrEqual(2 * PAGE);
  });

  it.skipIf(onPostgres)('a long walk down to the oldest page renews its lease before the first commit, so no other watcher takes the watch over', async () => {
    // (SQLite: leases run on the injected clock; on PostgreSQL on the server's, which a test cannot move.)
    const { signatures, launchId } = await backlog(BACKLOG);
    const clock = manualClock(Date.now() + 60_000);
    const takeovers: number[] = [];
    const reads: Read[] = [];
    const slow: ChainHistory = {
      ...rpc,
      // Each history read takes 1.2 s: the five reads down to the oldest page outlast a 3 s lease. A rival tries to claim after each.
      async signaturesForAddress(address, options) {
        clock.advance(1200);
        takeovers.push((await claimDueWatches(t.db, { owner: 'rival', now: clock.now(), leaseMs: 3000, limit: 16 })).filter((c) => c.launch_id === launchId).length);
        return rpc.signaturesForAddress(address, options);
      },
    };
    const w = new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: recorded(slow, reads), handlers: { transfers: transferHandler }, signal: noopSignal, pageLimit: PAGE, batchSize: PAGE, leaseMs: 3000 });
    await onlyDue(launchId);
    expect(await w.runOnce()).toBe(BACKLOG);
    expect(takeovers.every((n) => n === 0)).toBe(true);
    expect(takeovers.length).toBeGreaterThanOrEqual(5);
    expect((await reported(launchId)).map((e) => e.signature)).toEqual(signatures);
  });

  it.skipIf(onPostgres)('a watch claimed with others whose turn comes late in its lease renews it on its first read, before the lease runs out', async () => {
    // (SQLite: leases run on the injected clock.) Two watches claimed together with a 3 s lease; each
    // history read takes 2 s. The first watch's one read ends 2 s into the lease; the second's walk
    // down then starts with 1 s of lease left and its first read outlasts it unless renewed first.
    const first = await backlog(2);
    const second = await backlog(12);
    const clock = manualClock(Date.now() + 60_000);
    const takeovers: number[] = [];
    const slow: ChainHistory = {
      ...rpc,
      async signaturesForAddress(address, options) {
        clock.advance(2000);
        takeovers.push((await claimDueWatches(t.db, { owner: 'rival', now: clock.now(), leaseMs: 3000, limit: 16 })).filter((c) => c.launch_id === second.launchId).length);
        return rpc.signaturesForAddress(address, options);
      },
    };
    const w = new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: slow, handlers: { transfers: transferHandler }, signal: noopSignal, pageLimit: PAGE, batchSize: PAGE, leaseMs: 3000 });
    await onlyDue(first.launchId);
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 1 }).where('launch_id', '=', second.launchId).execute();
    expect(await w.runOnce()).toBe(2 + 12);
    expect(takeovers.length).toBeGreaterThanOrEqual(4);
    expect(takeovers.every((n) => n === 0)).toBe(true);
    expect((await reported(first.launchId)).map((e) => e.signature)).toEqual(first.signatures);
    expect((await reported(second.launchId)).map((e) => e.signature)).toEqual(second.signatures);
  });

  it('an address with nothing new costs one history read, as before', async () => {
    const { launchId } = await backlog(3);
    const w = watcher(rpc);
    await onlyDue(launchId);
    expect(await w.runOnce()).toBe(3);
    const reads: Read[] = [];
    const idle = watcher(recorded(rpc, reads));
    await onlyDue(launchId);
    expect(await idle.runOnce()).toBe(0);
    expect(reads).toHaveLength(1);
    expect((await watchOf(launchId)).lease_owner).toBeNull();
  });
});
