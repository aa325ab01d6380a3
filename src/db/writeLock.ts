import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * The write lock between the service's SQLite connection (main thread) and the chain thread's
 * connection to the same file (CHAIN_THREAD=on), in shared memory. SQLite's own lock would do, but
 * a connection that meets it waits in SQLite's busy handler, which sleeps on its thread: on the main
 * thread that is the event loop. So the main thread takes this lock whenever it takes its
 * connection (kysely's driver, see database.ts) and never blocks on it: it waits asynchronously
 * (`Atomics.waitAsync`) while the chain thread commits. The chain thread takes it for each commit of
 * the chain's state and may block on it, in slices of a millisecond, letting its own event loop run
 * between them (it keeps answering the main thread, which may be waiting on it inside a
 * transaction).
 *
 * It replaces a lock asked for by message: the main thread's answer and the release each waited
 * for a turn of a busy event loop, ~2 ms a commit during which the main thread's queries and the
 * chain's next transaction waited (`pipeline` bench, docs/benchmarks.md).
 *
 * A waiting chain thread goes first when the main thread next takes its connection (it commits
 * briefly and seldom: two commits a launch), unless the main thread has already waited for it.
 */

const STATE = 0;
const WANT = 1;
const FREE = 0;
const MAIN = 1;
const THREAD = 2;

/** Shared memory for one lock: hand it to the chain thread (workerData). */
export function createWriteLockBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
}

/** The main thread's side: taken with the connection, released with it. */
export interface MainWriteLock {
  /** Undefined when taken at once; otherwise resolves once taken. */
  acquire(): Promise<void> | undefined;
  /** Takes it only if it is free at once (held by neither side, the chain thread not waiting): whether it did. */
  tryAcquire(): boolean;
  release(): void;
  /** The chain thread ended (possibly holding or wanting the lock): frees it. */
  reset(): void;
}

export function mainWriteLock(buffer: SharedArrayBuffer): MainWriteLock {
  const cell = new Int32Array(buffer);
  const take = (yieldToThread: boolean) => (!yieldToThread || Atomics.load(cell, WANT) === 0) && Atomics.compareExchange(cell, STATE, FREE, MAIN) === FREE;

  async function wait(): Promise<void> {
    for (let round = 0; ; round++) {
      const state = Atomics.load(cell, STATE);
      if (state === FREE && take(round === 0)) return;
      // Until the state changes (the chain thread takes or releases the lock), at most 5 ms at a time.
      const waited = Atomics.waitAsync(cell, STATE, state, 5);
      if (waited.async) await waited.value;
      if (take(false)) return;
    }
  }

  return {
    acquire: () => (take(true) ? undefined : wait()),
    tryAcquire: () => take(true),
    release() {
      Atomics.store(cell, STATE, FREE);
      Atomics.notify(cell, STATE);
    },
    reset() {
      Atomics.store(cell, WANT, 0);
      Atomics.compareExchange(cell, STATE, THREAD, FREE);
      Atomics.notify(cell, STATE);
    },
  };
}

/** The chain thread's side: runs `write` (one commit) holding the lock. */
export async function holdWriteLock<T>(buffer: SharedArrayBuffer, write: () => Promise<T>): Promise<T> {
  const cell = new Int32Array(buffer);
  Atomics.store(cell, WANT, 1);
  try {
    while (Atomics.compareExchange(cell, STATE, FREE, THREAD) !== FREE) {
      // The main thread holds its connection: block up to 1 ms for its release, then let this
      // thread's event loop run before trying again.
      Atomics.wait(cell, STATE, MAIN, 1);
      if (Atomics.compareExchange(cell, STATE, FREE, THREAD) === FREE) break;
      await nextTurn();
    }
  } finally {
    Atomics.store(cell, WANT, 0);
  }
  Atomics.notify(cell, STATE);
  try {
    return await write();
  } finally {
    Atomics.store(cell, STATE, FREE);
    Atomics.notify(cell, STATE);
  }
}
