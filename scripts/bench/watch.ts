import { performance } from 'node:perf_hooks';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { createEmbeddedBackend } from '../../src/chain/embedded/backend.js';
import type { ChainHistory } from '../../src/chain/history.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { insertWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher, type WatchHandler } from '../../src/watcher/watcher.js';
import { createBenchDb, insertBenchLaunch } from './fixtures.js';
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

/** Counts history reads (what an RPC provider bills) around the embedded chain's ChainHistory. */
function counted(history: ChainHistory): ChainHistory & { reads: number } {
  const wrapped = {
    reads: 0,
    signaturesForAddress: (a: string, o: Parameters<ChainHistory['signaturesForAddress']>[1]) => ((wrapped.reads += 1), history.signaturesForAddress(a, o)),
    getTransaction: (s: string) => ((wrapped.reads += 1), history.getTransaction(s)),
    getAccountInfo: (p: PublicKey) => ((wrapped.reads += 1), history.getAccountInfo(p)),
    getProgramAccounts: history.getProgramAccounts,
  };
  return wrapped;
}

/**
 * `watch`: `count` completed launches watched on the embedded chain. (1) All idle, 30 simulated
 * minutes on a manual clock: chain reads per minute over the last 10, against polling every watch
 * at the active interval (the baseline). (2) Activity on `active` of them, on the wall clock:
 * latency from the transfer's commit on chain to its event's commit in the outbox, p50/p99.
 */
export async function benchWatch(count: number, active: number): Promise<{ results: BenchResult[]; note: string }> {
  const bench = await createBenchDb();
  const clock = manualClock(Date.now());
  const chain = await createEmbeddedBackend({ db: bench.db, secretKey: bench.secretKey, clock: systemClock, logger: silentLogger() });
  try {
    const addresses = Array.from({ length: count }, () => Keypair.generate().publicKey);
    for (const address of addresses) {
      const launchId = await insertBenchLaunch(bench.db, bench.box, 'http://127.0.0.1:9/hook');
      await insertWatches(bench.db, { launchId, watches: [{ kind: 'transfers', address: address.toBase58(), context: {} }], now: clock.now(), ttlMs: 365 * 86_400_000 });
    }
    const pollMs = 2000;
    const history = counted(chain.history);
    const idle = new ChainWatcher({ db: bench.db, clock, logger: silentLogger(), chain: history, handlers: { transfers }, signal: noopSignal, pollIntervalMs: pollMs, maxIntervalMs: 10 * 60_000, claimLimit: 200 });
    let readsAt20 = 0;
    for (let second = 0; second < 30 * 60; second += 1) {
      if (second === 20 * 60) readsAt20 = history.reads;
      clock.advance(1000);
      await idle.runOnce();
    }
    const idlePerMinute = (history.reads - readsAt20) / 10;
    const baselinePerMinute = count * (60_000 / pollMs);

    // Activity: a sample of watches made active again (as after a first claim), wall clock.
    const sample = addresses.slice(0, active).map((a) => a.toBase58());
    await bench.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ interval_ms: 500, next_check_at: Date.now() }).where('address', 'in', sample).execute();
    await bench.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: Date.now() + 3600_000 }).where('address', 'not in', sample).execute();
    const live = new ChainWatcher({ db: bench.db, clock: systemClock, logger: silentLogger(), chain: chain.history, handlers: { transfers }, signal: noopSignal, pollIntervalMs: 500, maxIntervalMs: 500 });
    live.start();
    const payer = Keypair.generate();
    await chain.airdrop(payer.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    const latencies: number[] = [];
    for (const address of sample) {
      const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
      const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(address), lamports: LAMPORTS_PER_SOL / 100 }),
      );
      tx.sign(payer);
      const signature = await chain.sendRawTransaction(tx.serialize());
      const sent = performance.now();
      for (;;) {
        const row = await bench.db.selectFrom('outbox_events').select('id').where('event', '=', 'bench.transfer').where('body', 'like', `%${signature}%`).executeTakeFirst();
        if (row) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      latencies.push(performance.now() - sent);
    }
    await live.stop();
    return {
      results: [
        result('watch-idle-reads-per-minute', idlePerMinute, 'reads/min', baselinePerMinute),
        result('watch-event-latency-p50', percentile(latencies, 50), 'ms', 0),
        result('watch-event-latency-p99', percentile(latencies, 99), 'ms', 0),
      ],
      note: `${count} watches; idle: reads/min after 20 simulated idle minutes vs polling all every ${pollMs / 1000} s; latency: chain commit → outbox commit, ${active} active watches polled every 500 ms`,
    };
  } finally {
    await chain.close();
    await bench.close();
  }
}
