/**
 * Resolves on the event loop's next check phase, after pending I/O. Work that is "async" only in
 * name (better-sqlite3, LiteSVM) otherwise runs as one long chain of microtasks that no socket
 * read, timer or health request can interrupt; awaiting this between units of work lets them in.
 */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
