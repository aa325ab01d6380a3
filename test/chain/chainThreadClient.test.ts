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
});
