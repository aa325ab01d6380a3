/**
 * A benchmark receiver in its own process, so the customer's server does not share the service's
 * CPU. Prints `{"url": …}` when listening; on the stdin line `dump` prints
 * `{"seen": [[eventId, wallMs], …]}` (first receipt of each event, wall clock with sub-ms
 * precision, comparable across processes on one machine) and exits.
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { startBenchReceiver } from './receiver.js';

const receiver = await startBenchReceiver({ record: true });
process.stdout.write(`${JSON.stringify({ url: receiver.url })}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'dump') return;
  const seen = [...receiver.firstSeen].map(([id, at]) => [id, performance.timeOrigin + at]);
  process.stdout.write(`${JSON.stringify({ seen })}\n`, () => {
    void receiver.close().then(() => process.exit(0));
  });
});
