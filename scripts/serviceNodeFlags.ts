/**
 * The V8 flags the service process runs with: `npm start` (package.json), the Docker image's CMD and
 * the README's fly.toml spell them out, and the benchmarks start every process that hosts the service
 * with them (test/app/nodeFlags.test.ts keeps the four in step).
 *
 * `--max-semi-space-size=32`: the young generation may grow to 32 MB semi-spaces instead of V8's
 * default 16 MB. At 500 webhook events/s the dispatcher allocates ~75 MB/s, and each scavenge
 * pauses the event loop ~4-6 ms however large the space is (it copies what is alive, not what is
 * dead); twice the space halves how often every in-flight delivery waits behind one (42 → 21
 * scavenges in 8 s, docs/benchmarks.md "Issue #12, eighth session"), for at most 32 MB more memory.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];
