import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriteLockBuffer, mainWriteLock } from '../../src/db/writeLock.js';

/**
 * The write lock the service's connection shares with the chain thread's (src/db/writeLock.ts),
 * between this thread and a real worker thread running the chain thread's side of it.
 */

const tsxApi = pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json').replace(/package\.json$/, 'dist/esm/api/index.mjs')).href;
const lockModule = new URL('../../src/db/writeLock.ts', import.meta.url).href;

/**
 * A worker that takes the lock as the chain thread does (`holdWriteLock`) when told `take`, says
 * `in` once it holds it, keeps it for `holdMs` (blocking, as a long commit would) and says `out`.
 */
function lockWorker(buffer: SharedArrayBuffer): { worker: Worker; next(kind: string): Promise<number> } {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(lockModule)}); }).then(({ holdWriteLock }) => {
      parentPort.on('message', ({ holdMs }) => {
        holdWriteLock(workerData, async () => {
          parentPort.postMessage({ t: 'in', at: Date.now() });
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, holdMs);
        }).then(() => parentPort.postMessage({ t: 'out', at: Date.now() }));
      });
      parentPort.postMessage({ t: 'ready', at: Date.now() });
    });`;
  const worker = new Worker(code, { eval: true, workerData: buffer });
  const seen: Array<{ t: string; at: number }> = [];
  const waiters: Array<() => void> = [];
  worker.on('message', (m: { t: string; at: number }) => {
    seen.push(m);
    waiters.splice(0).forEach((w) => w());
  });
  const next = async (kind: string) => {
    for (;;) {
      const i = seen.findIndex((m) => m.t === kind);
      if (i >= 0) return seen.splice(i, 1)[0]!.at;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { worker, next };
}

/** Records the gaps between ticks of this thread's event loop. */
function ticker() {
  const ticks: number[] = [Date.now()];
  const timer = setInterval(() => ticks.push(Date.now()), 10);
  return {
    stop() {
      clearInterval(timer);
      ticks.push(Date.now());
      return Math.max(...ticks.slice(1).map((at, i) => at - ticks[i]!));
    },
  };
}

describe('the write lock shared with the chain thread', () => {
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.terminate()));
  });

  it('makes the chain thread wait while this thread holds it, without ever blocking this thread', async () => {
    const buffer = createWriteLockBuffer();
    const lock = mainWriteLock(buffer);
    const { worker, next } = lockWorker(buffer);
    workers.push(worker);
    await next('ready');
    expect(lock.acquire()).toBeUndefined(); // free: taken at once
    const loop = ticker();
    worker.postMessage({ holdMs: 10 });
    let inside = false;
    const entered = next('in');
    void entered.then(() => (inside = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(inside).toBe(false);
    const releasedAt = Date.now();
    lock.release();
    const inAt = await entered;
    expect(inAt).toBeGreaterThanOrEqual(releasedAt);
    await next('out');
    expect(loop.stop()).toBeLessThan(100);
  });

  it('lets this thread wait asynchronously while the chain thread holds it', async () => {
    const buffer = createWriteLockBuffer();
    const lock = mainWriteLock(buffer);
    const { worker, next } = lockWorker(buffer);
    workers.push(worker);
    await next('ready');
    worker.postMessage({ holdMs: 300 });
    await next('in');
    const loop = ticker();
    const waiting = lock.acquire();
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
    const outAt = await next('out');
    // Taken once the worker let go, and this thread's loop kept turning meanwhile.
    expect(Date.now()).toBeGreaterThanOrEqual(outAt);
    expect(loop.stop()).toBeLessThan(100);
    lock.release();
  });

  it('lets the waiting chain thread go first when this thread next takes it', async () => {
    const buffer = createWriteLockBuffer();
    const lock = mainWriteLock(buffer);
    const { worker, next } = lockWorker(buffer);
    workers.push(worker);
    await next('ready');
    expect(lock.acquire()).toBeUndefined();
    worker.postMessage({ holdMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 30)); // the worker now wants it
    lock.release();
    const again = lock.acquire(); // right after the release: the worker's turn first
    expect(again).toBeInstanceOf(Promise);
    await again;
    const outAt = await next('out');
    expect(Date.now()).toBeGreaterThanOrEqual(outAt);
    lock.release();
  });

  it('is freed by reset when the chain thread ended holding it', async () => {
    const buffer = createWriteLockBuffer();
    const lock = mainWriteLock(buffer);
    const { worker, next } = lockWorker(buffer);
    await next('ready');
    worker.postMessage({ holdMs: 60_000 });
    await next('in');
    await worker.terminate(); // ended inside its commit
    let taken = false;
    const waiting = lock.acquire();
    expect(waiting).toBeInstanceOf(Promise);
    void waiting!.then(() => (taken = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(taken).toBe(false);
    lock.reset();
    await waiting;
    expect(taken).toBe(true);
    lock.release();
  });
});
