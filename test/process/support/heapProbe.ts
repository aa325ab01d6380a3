/**
 * Preloaded (`--import`) into a service process a test spawns with `--expose-gc` and an IPC channel:
 * on the message 'heap' it collects garbage and answers with its heap in use and RSS, in bytes, so a
 * test can bound what the process still holds after a load, not what the allocator has yet to return.
 */
const collect = (globalThis as { gc?: () => void }).gc;
process.on('message', (message) => {
  if (message !== 'heap' || !collect || !process.send) return;
  collect();
  collect();
  const { heapUsed, rss } = process.memoryUsage();
  process.send({ heapUsed, rss });
});
