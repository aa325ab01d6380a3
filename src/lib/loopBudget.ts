import { performance } from 'node:perf_hooks';
import { yieldToLoop } from './yieldToLoop.js';

/**
 * Shares the event loop between a burst of requests and everything else (docs/architecture.md,
 * Health). Node runs the callbacks of every socket that became readable in one poll phase
 * back to back, and libuv accepts one new connection per loop iteration (libuv#3696): 50 launch
 * requests arriving together (each ~6 ms of validation, sealing and inserts, all synchronous) made
 * one iteration last 300-400 ms on a busy 2-core machine, and a health probe on a new connection
 * waited behind several such iterations (1-5 s) although no single task was long.
 *
 * `enter()` lets request work run while the current slice of the loop has spent less than
 * `budgetMs` on it; past that, callers wait in arrival order and are let in a few at a time on
 * later iterations, each after a poll phase (new connections accepted, health answered, the
 * dispatcher's responses read). An idle loop admits at once: no timer, no extra hop.
 *
 * While connections are arriving (`connectionAccepted()` in this iteration) the slice is
 * `pressedMs`: each iteration accepts one connection, so a queue of 50 new connections (a client's
 * pool opening at once) takes 50 iterations to reach the health probe behind it, and the shorter
 * they are the sooner it is answered.
 */
export interface LoopBudget {
  /** Undefined when the caller may go on now; otherwise a promise that resolves at its turn. */
  enter(): Promise<void> | undefined;
  /** Callers waiting now. */
  waiting(): number;
  /** The HTTP server accepted a connection: this iteration's slice is the short one. */
  connectionAccepted(): void;
}

/**
 * Rounds of (microtasks, then ticks) an admission is given before the clock is read: reading a
 * buffered request body through @hono/node-server takes two, a launch creation's route a few more.
 */
const SETTLE_ROUNDS = 8;

function afterRounds(rounds: number, then: () => void): void {
  if (rounds === 0) return then();
  queueMicrotask(() => process.nextTick(() => afterRounds(rounds - 1, then)));
}

export function createLoopBudget(budgetMs = 10, pressedMs = 2): LoopBudget {
  const queue: Array<() => void> = [];
  /** A connection was accepted since the last slice: more may be waiting in the kernel's queue. */
  let accepting = false;
  /** Start of the current slice (the poll phase's admissions, or one pump), -1 when none is open. */
  let sliceStart = -1;
  let pumpScheduled = false;

  const closeSlice = () => {
    sliceStart = -1;
  };

  function schedulePump(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(pump);
  }

  /**
   * Admits waiters one at a time. The clock is read again only once the last admission has run as
   * far as it goes without waiting for I/O: a tick queued from a microtask runs after the whole
   * microtask queue (better-sqlite3 behind kysely, LiteSVM and the route's own awaits resolve as
   * microtasks), and a request's body, already buffered, arrives through a stream's ticks, so the
   * check waits out `SETTLE_ROUNDS` rounds of both. The slice then counts the admitted work (a
   * launch creation's validation, sealing and inserts), not just its first synchronous part, which
   * is all it counted before. The rest wait for the next iteration.
   */
  function pump(): void {
    pumpScheduled = false;
    const start = performance.now();
    const limit = accepting ? pressedMs : budgetMs;
    accepting = false;
    const step = () => {
      if (queue.length === 0) return;
      if (performance.now() - start >= limit) return schedulePump();
      queue.shift()!();
      afterRounds(SETTLE_ROUNDS, step);
    };
    step();
  }

  return {
    enter() {
      if (queue.length === 0) {
        const now = performance.now();
        if (sliceStart < 0) {
          sliceStart = now;
          // Runs in this iteration's check phase: the next poll phase opens a new slice.
          setImmediate(closeSlice);
          return undefined;
        }
        if (now - sliceStart < budgetMs) return undefined;
      }
      const turn = new Promise<void>((resolve) => queue.push(resolve));
      schedulePump();
      return turn;
    },
    waiting() {
      return queue.length;
    },
    connectionAccepted() {
      accepting = true;
    },
  };
}

/**
 * The process's one budget: API requests, the embedded chain's transactions and the launch runner's
 * claims share it, so a burst of any of them runs a slice per loop iteration.
 */
export const processLoopBudget: LoopBudget = createLoopBudget();

/**
 * A yield between units of background work: the next check phase, as {@link yieldToLoop}, or, when
 * the loop's current slice is spent, a turn behind the work already waiting for one.
 */
export function loopTurn(): Promise<void> {
  return processLoopBudget.enter() ?? yieldToLoop();
}
