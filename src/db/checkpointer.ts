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
let timer;
let stopped = false;
// After a restart that could not finish (another connection reading an older snapshot), the next
// one waits a while: each attempt pauses the service's database.
let restartAfter = 0;
const passive = () => {
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    return result ? result.log : 0;
  } catch (error) {
    parentPort.postMessage({ error: String(error) });
    return 0;
  }
};
const next = () => {
  if (!stopped) timer = setTimeout(tick, workerData.intervalMs);
};
const tick = () => {
  if (stopped) return;
  const frames = passive();
  // Past the limit: ask the service to hold its writes, restart on its 'go', then carry on.
  if (frames >= workerData.restartFrames && Date.now() >= restartAfter) parentPort.postMessage({ wantRestart: frames });
  else next();
};
next();
parentPort.on('message', (message) => {
  if (message === 'go' || message === 'skip') {
    if (message === 'go' && !stopped) {
      // RESTART holds the WAL's write lock while it waits for older readers: not for long.
      db.pragma('busy_timeout = ' + workerData.restartBusyMs);
      let busy = true;
      try {
        const [result] = db.pragma('wal_checkpoint(RESTART)');
        busy = !result || result.busy === 1;
      } catch (error) {
        parentPort.postMessage({ error: String(error) });
      } finally {
        db.pragma('busy_timeout = 5000');
      }
      if (busy) restartAfter = Date.now() + workerData.restartBackoffMs;
      parentPort.postMessage({ restarted: { busy } });
    }
    next();
    return;
  }
  if (message !== 'stop') return;
  stopped = true;
  clearTimeout(timer);
  passive();
  db.close();
  parentPort.postMessage({ stopped: true });
});
`;

/** WAL frames (4 KiB pages) past which the checkpointer restarts the WAL: 256 MiB. */
export const WAL_RESTART_FRAMES = 65_536;

/** How long the service's database waits for a restart it paused for, at most. */
const RESTART_PAUSE_LIMIT_MS = 2_000;

/**
 * How long a RESTART checkpoint waits for readers of an older snapshot (another process's connection,
 * a backup): it holds the WAL's write lock meanwhile. Then it gives up and the service writes on.
 */
const RESTART_BUSY_MS = 200;

export interface CheckpointerOptions {
  intervalMs?: number;
  /** WAL frames past which the worker restarts the WAL (default {@link WAL_RESTART_FRAMES}). */
  restartFrames?: number;
  /** After a restart that could not finish, how long the next one waits (default 30 s). */
  restartBackoffMs?: number;
  /**
   * Runs `during` while the service's database runs nothing else, resolving once `during` has
   * (openDatabase holds kysely's one SQLite connection: queries wait, the event loop does not).
   * Without it the restart runs at once, and a write that meets it waits in SQLite's busy handler.
   */
  pauseDatabase?: (during: () => Promise<void>) => Promise<void>;
  restartDelayMs?: number;
  /** How long a pause waits for the worker's answer at most (default 2 s; tests set it far above their bounds). */
  pauseLimitMs?: number;
  onError?: (message: string) => void;
  /** After each restart checkpoint: the WAL's frames before it; `busy` when it could not finish (an older reader). */
  onRestart?: (info: { frames: number; busy: boolean }) => void;
}

/**
 * SQLite's automatic checkpoint runs inside whichever commit crosses the WAL threshold, and
 * better-sqlite3 runs it on the event loop: measured here, that one commit stalls every in-flight
 * delivery and request for tens of milliseconds (delivery p99 18–133 ms with it, 4–6 ms without).
 * So the service turns the automatic checkpoint off and a worker thread with its own connection
 * runs PASSIVE checkpoints on an interval; PASSIVE never waits for, nor blocks, the writers.
 *
 * PASSIVE alone does not bound the WAL: SQLite writes it from the start again only when a write
 * transaction begins with every frame already copied, and under a steady stream of writes the
 * service always appends more while a checkpoint copies (measured: the WAL grew by 50-64 MB a second
 * at 500 events/s, to 1.4 GB during the 2 000-launch burst; a process killed then replays all of
 * it before it can open its port). So once a PASSIVE checkpoint leaves `restartFrames` or more in
 * the WAL, the worker asks for a pause: the service's database holds its connection idle (queries
 * wait asynchronously, the event loop runs on), the worker runs a RESTART checkpoint (what was
 * written since the PASSIVE one, then the syncs: a few ms), and the service's next write starts
 * the WAL from the beginning; `journal_size_limit` (openDatabase) cuts the file back to the limit.
 */
export function startBackgroundCheckpointer(path: string, options: CheckpointerOptions = {}): BackgroundCheckpointer {
  const workerData = { path, module: createRequire(import.meta.url).resolve('better-sqlite3'), intervalMs: options.intervalMs ?? 1000, restartFrames: options.restartFrames ?? WAL_RESTART_FRAMES, restartBusyMs: RESTART_BUSY_MS, restartBackoffMs: options.restartBackoffMs ?? 30_000 };
  /** Ends the database's pause for the restart in progress (when its answer, or the worker's end, comes). */
  let endPause: (() => void) | undefined;
  let restartFrames = 0;
  let stopping: Promise<void> | undefined;
  let restarts = 0;

  // A worker that dies (an uncaught error, a failed open) is replaced after a pause: without it the
  // WAL would grow without bound, since the service turned SQLite's own checkpoint off.
  function spawn(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData });
    w.unref(); // never keeps the process alive on its own
    w.on('message', (message: { error?: string; wantRestart?: number; restarted?: { busy: boolean } }) => {
      if (message.error) options.onError?.(message.error);
      if (message.wantRestart !== undefined) pauseForRestart(w, message.wantRestart);
      if (message.restarted) {
        options.onRestart?.({ frames: restartFrames, busy: message.restarted.busy });
        endPause?.();
      }
    });
    w.on('error', (error) => options.onError?.(error.message));
    w.on('exit', (code) => {
      endPause?.();
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

  function pauseForRestart(w: Worker, frames: number): void {
    restartFrames = frames;
    if (stopping) return void w.postMessage('skip');
    const during = () =>
      new Promise<void>((resolve) => {
        const limit = setTimeout(() => end(), options.pauseLimitMs ?? RESTART_PAUSE_LIMIT_MS);
        const end = () => {
          clearTimeout(limit);
          endPause = undefined;
          resolve();
        };
        endPause = end;
        if (stopping || w !== worker) {
          w.postMessage('skip');
          end();
          return;
        }
        w.postMessage('go');
      });
    if (!options.pauseDatabase) return void during();
    options.pauseDatabase(during).catch((error: unknown) => {
      options.onError?.(`could not pause the database for a WAL restart: ${String(error)}`);
      w.postMessage('skip');
    });
  }

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
        endPause?.();
        setTimeout(done, 2000).unref(); // a wedged worker must not hold up shutdown
      });
      return stopping;
    },
    restarts: () => restarts,
    worker: () => worker,
  };
}
