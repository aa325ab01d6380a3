import { performance } from 'node:perf_hooks';

/** How late this process's event loop has been running: a saturated loop delays every timer and read. */
export interface LoopLag {
  /** The largest event-loop delay (ms) seen since `since` (a `performance.now()` instant), including a stall in progress. */
  maxSince(since: number): number;
  /** True while the loop is running late (a delay of at least `busyMs` in the last `busyWindowMs`): bulk work should hold back. */
  busy(): boolean;
  stop(): void;
}

/**
 * Samples the event loop's delay with a short timer (the perf_hooks clock): each tick records how
 * much later than asked it ran. Kept for `historyMs`, so a failed attempt can ask whether the
 * process itself stalled while it was in flight. The timer is unref'd.
 */
export function startLoopLagMonitor(options: { intervalMs?: number; historyMs?: number; busyMs?: number; busyWindowMs?: number } = {}): LoopLag {
  const intervalMs = options.intervalMs ?? 20;
  const busyMs = options.busyMs ?? 50;
  const busyWindowMs = options.busyWindowMs ?? 250;
  const size = Math.ceil((options.historyMs ?? 120_000) / intervalMs);
  const times = new Float64Array(size);
  const delays = new Float64Array(size);
  let count = 0;
  let next = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    times[next] = now;
    delays[next] = Math.max(0, now - last - intervalMs);
    next = (next + 1) % size;
    count = Math.min(count + 1, size);
    last = now;
  }, intervalMs);
  timer.unref();

  const maxSince = (since: number) => {
    // A stall still going on (this very call may be running late) counts as well.
    let worst = Math.max(0, performance.now() - last - intervalMs);
    for (let i = 1; i <= count; i++) {
      const at = (next - i + size) % size;
      if (times[at]! < since) break;
      worst = Math.max(worst, delays[at]!);
    }
    return worst;
  };

  return {
    maxSince,
    busy() {
      return maxSince(performance.now() - busyWindowMs) >= busyMs;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
