import { createServer, connect, type Server } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
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

  /** Counts loop iterations in the check phase until stopped. */
  function iterations(): { now(): number; stop(): void } {
    let iteration = 0;
    let ticking = true;
    const tick = () => {
      iteration += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    return { now: () => iteration, stop: () => (ticking = false) };
  }

  function perIteration(done: Array<{ iteration: number }>): number[] {
    const counts = new Map<number, number>();
    for (const d of done) counts.set(d.iteration, (counts.get(d.iteration) ?? 0) + 1);
    return [...counts.values()];
  }

  it('counts the work an admitted request does after reading its buffered body, not just the part before it', async () => {
    const budget = createLoopBudget(5);
    const loop = iterations();
    const done: Array<{ n: number; iteration: number }> = [];
    const request = async (n: number) => {
      const turn = budget.enter();
      if (turn) await turn;
      // The body is already buffered, as a request's is by the time its turn comes; reading it
      // through a web stream over a node stream (as @hono/node-server does) takes ticks, not I/O.
      const body = (await new Response(Readable.toWeb(Readable.from([Buffer.from('{"n":1}')])) as ReadableStream).json()) as { n: number };
      burn(3 * body.n);
      done.push({ n, iteration: loop.now() });
    };
    expect(budget.enter()).toBeUndefined(); // the poll phase's slice is open ...
    burn(6); // ... and spent: the twenty wait for the pump
    await Promise.all(Array.from({ length: 20 }, (_, n) => request(n)));
    loop.stop();
    expect(done.map((d) => d.n)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    // Counted only up to the body read, all twenty would be let in by the first slice.
    expect(Math.max(...perIteration(done))).toBeLessThanOrEqual(3);
    expect(perIteration(done).length).toBeGreaterThanOrEqual(7);
  });

  it('while connections are being accepted a slice is the short one', async () => {
    const budget = createLoopBudget(10, 2);
    const loop = iterations();
    const done: Array<{ n: number; iteration: number }> = [];
    const work = async (n: number) => {
      const turn = budget.enter();
      if (turn) await turn;
      burn(3);
      done.push({ n, iteration: loop.now() });
    };
    expect(budget.enter()).toBeUndefined();
    burn(11);
    const all = Promise.all(Array.from({ length: 9 }, (_, n) => work(n)));
    budget.connectionAccepted(); // libuv accepted one connection this iteration; more may be queued
    await all;
    loop.stop();
    const counts = perIteration(done);
    // The first slice, pressed, lets one in (3 ms is past 2 ms); the next ones, not pressed, up to four.
    expect(counts[0]).toBe(1);
    expect(Math.max(...counts.slice(1))).toBeGreaterThanOrEqual(2);
    expect(budget.waiting()).toBe(0);
  });

  it('an idle loop admits at once, without a hop', () => {
    const budget = createLoopBudget(5);
    expect(budget.enter()).toBeUndefined();
    expect(budget.enter()).toBeUndefined();
  });
});
