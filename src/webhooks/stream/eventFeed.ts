/**
 * Wakes the event streams when events may have committed: this process's commits (the outbox
 * signal) and, on PostgreSQL, another instance's (its `deliveries` wake-up; every event has at least
 * one delivery). A wake only cuts a stream's wait short; each stream still polls, so a lost wake
 * costs one poll interval. `close()` ends every stream (service shutdown).
 *
 * A wait listens on no shared signal: `close()` resolves the waiting set itself, so a thousand open
 * streams add no listener to `closed` (one each made Node warn MaxListenersExceededWarning past ten).
 */
export interface EventFeed {
  wake(): void;
  /** Resolves at the next wake, after `timeoutMs`, or when `signal` aborts or the feed closes. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Aborted once the feed closes. */
  readonly closed: AbortSignal;
  close(): void;
}

export function createEventFeed(): EventFeed {
  const waiters = new Set<() => void>();
  const closing = new AbortController();
  const wakeAll = () => {
    if (waiters.size === 0) return;
    const woken = [...waiters];
    waiters.clear();
    for (const resolve of woken) resolve();
  };
  return {
    wake: wakeAll,
    wait(timeoutMs, signal) {
      if (closing.signal.aborted || signal?.aborted) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    get closed() {
      return closing.signal;
    },
    close() {
      closing.abort();
      wakeAll();
    },
  };
}
