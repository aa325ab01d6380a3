import { describe, expect, it } from 'vitest';
import { createPollLoop } from '../../src/lib/pollLoop.js';
import { silentLogger } from '../../src/lib/logger.js';

describe('poll loop', () => {
  it('stop() waits for tracked work, and with a bound gives up on work that never ends', async () => {
    let finish: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (finish = resolve));
    let turns = 0;
    const loop = createPollLoop({
      logger: silentLogger(),
      what: 'test',
      intervalMs: 60_000,
      turn: async () => {
        turns += 1;
        if (turns === 1) loop.track(slow);
        return false;
      },
    });
    loop.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect(loop.inFlight()).toBe(1);
    expect(await loop.stop({ timeoutMs: 20 })).toBe(false);
    let stopped = false;
    const stopping = loop.stop().then((all) => (stopped = all));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(stopped).toBe(true);
    expect(loop.inFlight()).toBe(0);
  });

  it('backs off instead of spinning when a turn fails', async () => {
    let turns = 0;
    const loop = createPollLoop({
      logger: silentLogger(),
      what: 'test',
      intervalMs: 10,
      turn: async () => {
        turns += 1;
        throw new Error('database is locked');
      },
    });
    loop.start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await loop.stop();
    // 10, 20, 40, 80, 160 ms backoff: at most ~5 turns in 300 ms instead of one per 10 ms.
    expect(turns).toBeGreaterThan(1);
    expect(turns).toBeLessThanOrEqual(6);
  });
});
