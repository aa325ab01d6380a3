import { EventEmitter } from 'node:events';
import { Keypair } from '@solana/web3.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectChainThread, type ClientPort } from '../../src/chain/embedded/thread/client.js';
import type { ChainThreadInfo, FromChain, ToChain } from '../../src/chain/embedded/thread/protocol.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TransientError } from '../../src/lib/retry.js';

/**
 * A stand-in for the chain thread's Worker, so the client's restart rules can be driven step by
 * step with fake timers (the real thread is exercised in chainThread.test.ts).
 */
class FakePort extends EventEmitter implements ClientPort {
  private static nextId = 1;
  readonly threadId = FakePort.nextId++;
  readonly sent: ToChain[] = [];
  postMessage(message: ToChain): void {
    this.sent.push(message);
  }
  send(message: FromChain): void {
    this.emit('message', message);
  }
  async terminate(): Promise<number> {
    this.emit('exit', 1);
    return 1;
  }
}

const info: ChainThreadInfo = {
  payerSecretKey: Keypair.generate().secretKey,
  loadedPrograms: [],
  genesisHash: '11111111111111111111111111111111',
  timelineOrigin: { genesisMs: Date.now() - 10_000, chainId: 'test' },
  floorHeight: 1,
  transactionCount: 0,
};

afterEach(() => {
  vi.useRealTimers();
});

describe('the chain thread client', () => {
  it('starts a stopped thread again once per failure, backing off while new ones fail to start', async () => {
    vi.useFakeTimers();
    const ports: FakePort[] = [];
    const spawn = () => {
      const port = new FakePort();
      ports.push(port);
      return port;
    };
    const connecting = connectChainThread(spawn, { clock: systemClock, logger: silentLogger() });
    ports[0]!.send({ t: 'ready', info });
    const thread = await connecting;
    expect(thread.current()).toBe(ports[0]);

    // The thread ends: a call fails at once as retriable, and one new thread starts 1 s later.
    ports[0]!.emit('exit', 1);
    const during = await thread.backend.probe().catch((error: unknown) => error);
    expect(during).toBeInstanceOf(TransientError);
    expect((during as TransientError).code).toBe('chain_unavailable');
    expect(ports).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(ports).toHaveLength(2);

    // It fails to start (its answer, then its exit): exactly one more start, 2 s later, not two.
    ports[1]!.send({ t: 'failed', error: { name: 'Error', message: 'disk gone' } });
    ports[1]!.emit('exit', 1);
    await vi.advanceTimersByTimeAsync(1999);
    expect(ports).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(ports).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(60_000 - 1);
    // The third did not answer within the start timeout: ended, and one more start 4 s after.
    expect(ports).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(4000);
    expect(ports).toHaveLength(4);

    // This one comes up: calls go to it.
    ports[3]!.send({ t: 'ready', info });
    expect(thread.current()).toBe(ports[3]);
    const probe = thread.backend.probe();
    const asked = ports[3]!.sent.find((m) => m.t === 'call');
    expect(asked).toMatchObject({ t: 'call', method: 'probe' });
    ports[3]!.send({ t: 'result', id: (asked as { id: number }).id, value: { slot: 5, unixTimestamp: 1, payerBalance: 2 } });
    expect(await probe).toEqual({ slot: 5, unixTimestamp: 1, payerBalance: 2 });

    // Closing ends it for good: no start after.
    const closing = thread.backend.close();
    ports[3]!.send({ t: 'closed' });
    await closing;
    await vi.advanceTimersByTimeAsync(120_000);
    expect(ports).toHaveLength(4);
  });

  it('reports the activity that rides on an answer or a record before that message, and alone', async () => {
    const port = new FakePort();
    const connecting = connectChainThread(() => port, { clock: systemClock, logger: silentLogger() });
    port.send({ t: 'ready', info });
    const thread = await connecting;
    const seen: string[][] = [];
    thread.backend.history.onActivity?.((addresses) => seen.push([...addresses]));

    // A step: its record carries the first transaction's accounts, its result the second's.
    const recorded: string[] = [];
    let seenAtRecord = -1;
    const step = thread.runStep({
      launchId: 'lch_1',
      step: 'create_mint',
      request: {},
      results: {},
      pending: {},
      logger: silentLogger(),
      recordPending: async (label) => {
        seenAtRecord = seen.length;
        recorded.push(label);
      },
    });
    const sent = port.sent.find((m) => m.t === 'step') as { id: number };
    port.send({ t: 'record', id: 1, step: sent.id, label: 'mint', tx: {}, activity: { addresses: ['A', 'B'], count: 1 } });
    await vi.waitFor(() => expect(port.sent.some((m) => m.t === 'recorded')).toBe(true));
    expect(recorded).toEqual(['mint']);
    expect(seenAtRecord).toBe(1);
    let seenAtResult = -1;
    const done = step.then((outcome) => {
      seenAtResult = seen.length;
      return outcome;
    });
    port.send({ t: 'result', id: sent.id, value: { result: {}, transactions: [] }, activity: { addresses: ['C'], count: 2 } });
    await done;
    expect(seenAtResult).toBe(2);
    // Activity with no message to ride on comes alone.
    port.send({ t: 'activity', addresses: ['D'], count: 3 });
    expect(seen).toEqual([['A', 'B'], ['C'], ['D']]);
    expect(thread.backend.transactionCount()).toBe(3);
  });

  it('asks the thread for each size’s rent-exempt minimum once', async () => {
    const port = new FakePort();
    const connecting = connectChainThread(() => port, { clock: systemClock, logger: silentLogger() });
    port.send({ t: 'ready', info });
    const thread = await connecting;
    const rentCalls = () => port.sent.filter((m) => m.t === 'call' && m.method === 'getMinimumBalanceForRentExemption') as Array<{ id: number; args: unknown[] }>;

    // A failed answer is not remembered.
    const failing = thread.backend.getMinimumBalanceForRentExemption(165);
    port.send({ t: 'error', id: rentCalls()[0]!.id, error: { name: 'TransientError', code: 'chain_unavailable', message: 'busy' } });
    await expect(failing).rejects.toBeInstanceOf(TransientError);

    const first = thread.backend.getMinimumBalanceForRentExemption(165);
    const second = thread.backend.getMinimumBalanceForRentExemption(165);
    expect(rentCalls()).toHaveLength(2);
    port.send({ t: 'result', id: rentCalls()[1]!.id, value: 2_039_280 });
    expect([await first, await second]).toEqual([2_039_280, 2_039_280]);
    expect(await thread.backend.getMinimumBalanceForRentExemption(165)).toBe(2_039_280);
    expect(rentCalls()).toHaveLength(2);

    const other = thread.backend.getMinimumBalanceForRentExemption(82);
    expect(rentCalls()).toHaveLength(3);
    expect(rentCalls()[2]!.args).toEqual([82]);
    port.send({ t: 'result', id: rentCalls()[2]!.id, value: 1_461_600 });
    expect(await other).toBe(1_461_600);
  });
});
