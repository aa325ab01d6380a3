/**
 * In-process wake-up of the graduation job: the watcher's commit that makes a graduation due calls
 * `notify()` after the row is written, so this process's job looks at once instead of at its next
 * poll. A hint only: the job's poll finds due rows anyway (other instances, a lost hint).
 */
const listeners = new Set<() => void>();

export const graduationDue = {
  notify(): void {
    // After the caller's commit: the row is visible to the job's claim by the time it runs.
    setTimeout(() => {
      for (const listener of listeners) listener();
    }, 0);
  },
  on(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
