import { createServer, connect, type Server } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createLoopBudget } from '../../src/lib/loopBudget.js';

/** Synchronous work, as a launch request's validation, sealing and SQLite inserts are. */
function burn(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('loop budget', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('a burst of request work read in one poll phase runs a slice per loop iteration, in arrival order, with new connections accepted in between', async () => {
    const budget = createLoopBudget(5);
    // Loop iterations, counted in the check phase.
    let iteration = 0;
    let ticking = true;
    const tick = () => {
      iteration += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    // A client connects now; the server sees it only when the loop polls.
    server = createServer();
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const done: Array<{ n: number; iteration: number }> = [];
    let doneAtAccept = -1;
    server.on('connection', (socket) => {
      doneAtAccept = done.length;
      socket.destroy();
    });
    const port = (server.address() as { port: number }).port;
    const client = connect(port, '127.0.0.1');
    client.on('error', () => undefined);

    const request = async (n: number) => {
      const turn = budget.enter();
      if (turn) await turn;
      burn(3);
      done.push({ n, iteration });
    };
    // Twenty requests at once, as one poll phase delivers them (the connection is not accepted yet).
    expect(doneAtAccept).toBe(-1);
    await Promise.all(Array.from({ length: 20 }, (_, n) => request(n)));
    ticking = false;
    client.destroy();

    expect(done.map((d) => d.n)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    const perIteration = new Map<number, number>();
    for (const d of done) perIteration.set(d.iteration, (perIteration.get(d.iteration) ?? 0) + 1);
    // 3 ms each against a 5 ms budget: at most two start in a slice, and the second may overrun it.
    expect(Math.max(...perIteration.values())).toBeLessThanOrEqual(3);
    expect(perIteration.size).toBeGreaterThanOrEqual(7);
    // The pending connection was accepted between slices, not after the whole burst.
    expect(doneAtAccept).toBeGreaterThanOrEqual(0);
    expect(doneAtAccept).toBeLessThan(20);
    expect(budget.waiting()).toBe(0);
  });

  it('an idle loop admits at once, without a hop', () => {
    const budget = createLoopBudget(5);
    expect(budget.enter()).toBeUndefined();
    expect(budget.enter()).toBeUndefined();
  });
});
