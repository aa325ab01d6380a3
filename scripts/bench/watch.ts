import { performance } from 'node:perf_hooks';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { createEmbeddedBackend } from '../../src/chain/embedded/backend.js';
import type { ChainHistory } from '../../src/chain/history.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { insertWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher, type WatchHandler } from '../../src/watcher/watcher.js';
import { benchConfig } from './config.js';
import { createBenchDb, insertBenchLaunch } from './fixtures.js';
import { startBenchReceiver } from './receiver.js';
import { percentile, result, type BenchResult } from './types.js';

const SYSTEM = '11111111111111111111111111111111';

/** Every system transfer into the watched address is one event (needs no extra program). */
const transfers: WatchHandler = {
  async process(watch, transactions) {
    return {
      events: transactions.flatMap((tx) =>
        tx.instructions.flatMap((ix, index) =>
          ix.programId === SYSTEM && ix.accounts[1] === watch.address ? [{ event: 'bench.transfer', signature: tx.signature, instructionIndex: index, data: { signature: tx.signature } }] : [],
        ),
      ),
    };
  },
};

/** Counts chain reads (what an RPC provider bills) around the embedded chain's ChainHistory; keeps its wake-ups unless told not to. */
function counted(history: ChainHistory, wakeUps: boolean): ChainHistory & { reads: number } {
  const wrapped = {
    reads: 0,
    signaturesForAddress: (a: string, o: Parameters<ChainHistory['signaturesForAddress']>[1]) => ((wrapped.reads += 1), history.signaturesForAddress(a, o)),
    getTransaction: (s: string) => ((wrapped.reads += 1), history.getTransaction(s)),
    getAccountInfo: (p: PublicKey) => ((wrapped.reads += 1), history.getAccountInfo(p)),
    getProgramAccounts: history.getProgramAccounts,
    ...(wakeUps && history.onActivity ? { onActivity: history.onActivity } : {}),
  };
  return wrapped;
}

/**
 * `watch`: `count` completed launches, each watching one real address on the embedded chain
 * (synthetic watches: a full launch with the four programs per watch would make the setup the
 * benchmark; the watcher's cost does not depend on what the address is).
 * (1) All idle for 30 simulated minutes (manual clock, service defaults: 2 s after activity, doubling
 *     to 10 min): chain reads per minute over the last 10, against polling every watch every 2 s.
 * (2) On the wall clock, every watch idle at its 10-min interval, then a transfer into each of
 *     `active` of them, 300 ms apart: latency from the transaction's commit on chain to the signed
 *     delivery at a local receiver (watcher with the chain's wake-ups + the real dispatcher), and the
 *     chain reads that activity cost.
 */
export async function benchWatch(count: number, active: number): Promise<{ results: BenchResult[]; note: string }> {
  const bench = await createBenchDb();
  const receiver = await startBenchReceiver({ record: true });
  const clock = manualClock(Date.now());
  const chain = await createEmbeddedBackend({ db: bench.db, secretKey: bench.secretKey, clock: systemClock, logger: silentLogger() });
  try {
    const addresses = Array.from({ length: count }, () => Keypair.generate().publicKey);
    for (const address of addresses) {
      const launchId = await insertBenchLaunch(bench.db, bench.box, receiver.url);
      await insertWatches(bench.db, { launchId, watches: [{ kind: 'transfers', address: address.toBase58(), context: {} }], now: clock.now(), ttlMs: 365 * 86_400_000 });
    }
    const pollMs = 2000;
    const idleHistory = counted(chain.history, false);
    const idle = new ChainWatcher({ db: bench.db, clock, logger: silentLogger(), chain: idleHistory, handlers: { transfers }, signal: noopSignal, pollIntervalMs: pollMs, maxIntervalMs: 10 * 60_000, claimLimit: 200 });
    let readsAt20 = 0;
    for (let second = 0; second < 30 * 60; second += 1) {
      if (second === 20 * 60) readsAt20 = idleHistory.reads;
      clock.advance(1000);
      await idle.runOnce();
    }
    await idle.stop();
    const idlePerMinute = (idleHistory.reads - readsAt20) / 10;
    const baselinePerMinute = count * (60_000 / pollMs);

    // Activity on the wall clock: every watch idle at the cap (checks spread over the next 10 min),
    // then transfers into a sample; the chain's wake-ups make those watches due.
    const now = Date.now();
    await bench.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ interval_ms: 10 * 60_000, next_check_at: now + 10 * 60_000, lease_owner: null }).execute();
    const engine = createWebhookEngine({ db: bench.db, clock: systemClock, logger: silentLogger(), config: benchConfig(bench.dir, bench.secretKey), secretBox: bench.box });
    engine.start();
    const history = counted(chain.history, true);
    const live = new ChainWatcher({ db: bench.db, clock: systemClock, logger: silentLogger(), chain: history, handlers: { transfers }, signal: engine.signal, pollIntervalMs: pollMs, maxIntervalMs: 10 * 60_000 });
    live.start();
    const payer = Keypair.generate();
    await chain.airdrop(payer.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    const sample = addresses.slice(0, active);
    const committed = new Map<string, number>();
    const startedAt = performance.now();
    const readsBefore = history.reads;
    for (const address of sample) {
      const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
      const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: address, lamports: LAMPORTS_PER_SOL / 100 }));
      tx.sign(payer);
      const signature = await chain.sendRawTransaction(tx.serialize());
      committed.set(signature, performance.now()); // sendRawTransaction resolves once the chain committed it
      await new Promise((r) => setTimeout(r, 300));
    }
    const deadline = Date.now() + 30_000;
    const delivered = async () => {
      const rows = await bench.db.selectFrom('outbox_events').select(['id', 'body']).where('event', '=', 'bench.transfer').execute();
      return rows.map((r) => ({ id: r.id, signature: (JSON.parse(r.body) as { data: { signature: string } }).data.signature })).filter((r) => receiver.firstSeen.has(r.id));
    };
    let got = await delivered();
    while (got.length < sample.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      got = await delivered();
    }
    const minutes = (performance.now() - startedAt) / 60_000;
    const activityReads = history.reads - readsBefore;
    await live.stop();
    await engine.stop();
    const latencies = got.map((r) => (receiver.firstSeen.get(r.id) ?? 0) - (committed.get(r.signature) ?? 0));
    return {
      results: [
        result('watch-idle-reads-per-minute', idlePerMinute, 'reads/min', baselinePerMinute),
        result('watch-event-latency-p50', percentile(latencies, 50), 'ms', 0),
        result('watch-event-latency-p99', percentile(latencies, 99), 'ms', 0),
        result('watch-reads-per-event', got.length > 0 ? activityReads / got.length : Number.NaN, 'reads', 0),
      ],
      note:
        `${count} watches; idle: reads/min after 20 simulated idle minutes vs polling all every ${pollMs / 1000} s; ` +
        `activity: ${got.length}/${sample.length} transfers delivered, chain commit → signed delivery at the receiver (watcher poll ${pollMs / 1000} s with the chain's wake-ups, every watch idle at 10 min); ` +
        `${activityReads} chain reads in ${minutes.toFixed(2)} min of activity`,
    };
  } finally {
    await chain.close();
    await receiver.close();
    await bench.close();
  }
}
