import { describe, expect, it } from 'vitest';
import { createSettleBatcher, FLUSH_WAIT_MS, MAX_SETTLE_BATCH } from '../../../src/webhooks/dispatch/settleBatcher.js';
import type { SettleInput } from '../../../src/webhooks/settle.js';

const input = (id: string) => ({ delivery: { id } }) as SettleInput;

describe('settle batcher (dispatch/settleBatcher.ts)', () => {
  it('settles the attempts that finished in one turn of the event loop with one flush', async () => {
    let flushes = 0;
    const batcher = createSettleBatcher({ youngOut: () => false, stopping: () => false, flush: () => void (flushes += 1) });
    const results = [batcher.settle(input('a'), false), batcher.settle(input('b'), true), batcher.settle(input('c'), false)];
    expect(flushes).toBe(0); // not before the next turn of the loop
    await new Promise((r) => setImmediate(r));
    expect(flushes).toBe(1);
    const batch = batcher.take();
    expect(batch.map((b) => [b.input.delivery.id, b.ordered])).toEqual([['a', false], ['b', true], ['c', false]]);
    batch[0]!.resolve('delivered');
    batch[1]!.resolve('retrying');
    batch[2]!.reject(new Error('poisoned'));
    await expect(results[0]).resolves.toBe('delivered');
    await expect(results[1]).resolves.toBe('retrying');
    await expect(results[2]).rejects.toThrow('poisoned');
  });

  it('waits at most FLUSH_WAIT_MS for an attempt sent moments ago, and not at all while stopping', async () => {
    let flushedAt = 0;
    let stopping = false;
    const batcher = createSettleBatcher({ youngOut: () => true, stopping: () => stopping, flush: () => void (flushedAt = performance.now()) });
    const t0 = performance.now();
    void batcher.settle(input('a'), false);
    await new Promise((r) => setImmediate(r));
    expect(flushedAt).toBe(0);
    while (flushedAt === 0 && performance.now() - t0 < 2_000) await new Promise((r) => setTimeout(r, 1));
    expect(flushedAt - t0).toBeGreaterThanOrEqual(FLUSH_WAIT_MS - 1);
    batcher.take();
    flushedAt = 0;
    stopping = true;
    void batcher.settle(input('b'), false);
    await new Promise((r) => setImmediate(r));
    expect(flushedAt).toBeGreaterThan(0);
  });

  it('takes at most MAX_SETTLE_BATCH at a time and schedules another flush for the rest', async () => {
    let flushes = 0;
    const batcher = createSettleBatcher({ youngOut: () => false, stopping: () => false, flush: () => void (flushes += 1) });
    for (let i = 0; i < MAX_SETTLE_BATCH + 5; i++) void batcher.settle(input(`d${i}`), false);
    await new Promise((r) => setImmediate(r));
    expect(batcher.take().length).toBe(MAX_SETTLE_BATCH);
    expect(batcher.pending()).toBe(5);
    await new Promise((r) => setImmediate(r));
    expect(flushes).toBe(2);
    expect(batcher.take().length).toBe(5);
  });
});
