import { performance } from 'node:perf_hooks';
import { yieldToLoop } from './yieldToLoop.js';

/**
 * Shares the event loop between a burst of requests and everything else (issue #12, "health
 * answers first"). Node runs the callbacks of every socket that became readable in one poll phase
 * back to back, and libuv accepts one new connection per loop iteration: 50 launch requests
 * arriving together (each ~6 ms of validation, sealing and inserts, all synchronous) made one
 * iteration last 300-400 ms on a busy 2-core machine, and a health probe on a new connection waited
 * behind several such iterations (1-5 s) although no single task was long.
 *
 * `enter()` lets request work run while the current slice of the loop has spent less than
 * `budgetMs` on it; past that, callers wait in arrival order and are let in a few at a time on
 * later iterations, each after a poll phase (new connections accepted, health answered, the
 * dispatcher's responses read). An idle loop admits at once: no timer, no extra hop.
 */
export interface LoopBudget {
  /** Undefined when the caller may go on now; otherwise a promise that resolves at its turn. */
  enter(): Promise<void> | undefined;
  /** Callers waiting now. */
  waiting(): number;
}

export function createLoopBudget(budgetMs = 10): LoopBudget {
  const queue: Array<() => void> = [];
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
   * Admits waiters one at a time; each admission's first synchronous run happens before the next
   * check of the clock (queueMicrotask runs after the continuation the admission queued), so the
   * slice stops close to the budget. The rest wait for the next iteration.
   */
  function pump(): void {
    pumpScheduled = false;
    const start = performance.now();
    const step = () => {
      if (queue.length === 0) return;
      if (performance.now() - start >= budgetMs) return schedulePump();
      queue.shift()!();
      queueMicrotask(step);
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
