import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Checkpoints the WAL from a worker thread so the service's event loop never waits for it. */
export interface BackgroundCheckpointer {
  /** Runs a last checkpoint, closes the worker's connection and ends the thread. */
  stop(): Promise<void>;
  /** How many times a worker that died was replaced. */
  restarts(): number;
  /** The current worker thread (tests end it to check the restart). */
  worker(): Worker;
}

// Plain CommonJS evaluated in the worker, so it runs the same under tsx, vitest and plain node.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (error) { parentPort.postMessage({ error: String(error) }); }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage({ stopped: true });
});
`;

/**
 * SQLite's automatic checkpoint runs inside whichever commit crosses the WAL threshold, and
 * better-sqlite3 runs it on the event loop: measured here, that one commit stalls every in-flight
 * delivery and request for tens of milliseconds (delivery p99 18–133 ms with it, 4–6 ms without).
 * So the service turns the automatic checkpoint off and a worker thread with its own connection
 * runs PASSIVE checkpoints on an interval; PASSIVE never waits for, nor blocks, the writers.
 */
export function startBackgroundCheckpointer(
  path: string,
  options: { intervalMs?: number; restartDelayMs?: number; onError?: (message: string) => void } = {},
): BackgroundCheckpointer {
  const workerData = { path, module: createRequire(import.meta.url).resolve('better-sqlite3'), intervalMs: options.intervalMs ?? 1000 };
  let stopping: Promise<void> | undefined;
  let restarts = 0;

  // A worker that dies (an uncaught error, a failed open) is replaced after a pause: without it the
  // WAL would grow without bound, since the service turned SQLite's own checkpoint off.
  function spawn(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData });
    w.unref(); // never keeps the process alive on its own
    w.on('message', (message: { error?: string }) => {
      if (message.error) options.onError?.(message.error);
    });
    w.on('error', (error) => options.onError?.(error.message));
    w.on('exit', (code) => {
      if (stopping) return;
      options.onError?.(`checkpoint worker exited (code ${code}); restarting it`);
      setTimeout(() => {
        if (stopping) return;
        restarts += 1;
        worker = spawn();
      }, options.restartDelayMs ?? 1000).unref();
    });
    return w;
  }
  let worker = spawn();

  return {
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        const current = worker;
        const done = () => {
          void current.terminate().finally(resolve);
        };
        current.on('message', (message: { stopped?: boolean }) => message.stopped && done());
        current.once('exit', () => resolve());
        current.postMessage('stop');
        setTimeout(done, 2000).unref(); // a wedged worker must not hold up shutdown
      });
      return stopping;
    },
    restarts: () => restarts,
    worker: () => worker,
  };
}
