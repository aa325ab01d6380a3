import type { Logger } from './logger.js';

/**
 * One background worker loop: fetch → handle → settle → abortable sleep. A turn fetches due work
 * and hands each piece to {@link PollLoop.track}; the loop sleeps until the poll interval passes or
 * `wake()` is called (new work committed, a tracked piece finished). A failing turn backs off
 * exponentially, so a broken database never becomes a hot loop. `stop()` ends the turns, then waits
 * for everything tracked. Serves the launch runner and the webhook dispatcher.
 */
export interface PollLoop {
  start(): void;
  /** Cuts the current sleep short; a wake while a turn runs makes the next sleep return at once. */
  wake(): void;
  /**
   * Stops turning and resolves once the turn in progress and every tracked task are done, or once
   * `timeoutMs` has passed (then resolves false: work still running is left to its leases).
   */
  stop(options?: { timeoutMs?: number }): Promise<boolean>;
  /** Registers in-flight work: `stop()` waits for it, and its end wakes the loop (a slot is free). */
  track(task: Promise<unknown>): void;
  inFlight(): number;
  isRunning(): boolean;
}

export interface PollLoopOptions {
  logger: Logger;
  /** What a turn does, for the error log line ("claiming launches"). */
  what: string;
  intervalMs: number;
  /** Cap of the error backoff (default 30 s). */
  maxBackoffMs?: number;
  /** One turn. Resolves `true` to turn again without sleeping (it found work and has room for more). */
  turn(): Promise<boolean>;
  /** Awaited after each sleep, before the next turn (e.g. let this event-loop turn's completions land). */
  afterSleep?(): Promise<void>;
}

export function createPollLoop(options: PollLoopOptions): PollLoop {
  const tasks = new Set<Promise<unknown>>();
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  let running = false;
  let loopDone: Promise<void> | undefined;
  let wakePending = false;
  let cutSleep: (() => void) | undefined;

  function sleep(ms: number): Promise<void> {
    if (wakePending) {
      wakePending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        cutSleep = undefined;
        resolve();
      }
      cutSleep = done;
    });
  }

  function wake(): void {
    if (cutSleep) cutSleep();
    else wakePending = true;
  }

  async function loop(): Promise<void> {
    let errors = 0;
    while (running) {
      let again = false;
      try {
        again = await options.turn();
        errors = 0;
      } catch (error) {
        errors += 1;
        options.logger.error({ err: error, consecutiveErrors: errors }, `${options.what} failed`);
      }
      if (!running) break;
      if (!again) await sleep(errors > 0 ? Math.min(maxBackoff, options.intervalMs * 2 ** errors) : options.intervalMs);
      await options.afterSleep?.();
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      wakePending = false;
      loopDone = loop();
    },
    wake,
    async stop(stopOptions = {}) {
      running = false;
      wake();
      const settled = (async () => {
        await loopDone;
        while (tasks.size > 0) await Promise.allSettled([...tasks]);
        return true;
      })();
      if (stopOptions.timeoutMs === undefined) return settled;
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), stopOptions.timeoutMs);
      });
      try {
        return await Promise.race([settled, bound]);
      } finally {
        clearTimeout(timer);
      }
    },
    track(task) {
      const tracked = task.then(
        () => undefined,
        () => undefined,
      );
      tasks.add(tracked);
      void tracked.finally(() => {
        tasks.delete(tracked);
        wake();
      });
    },
    inFlight: () => tasks.size,
    isRunning: () => running,
  };
}
