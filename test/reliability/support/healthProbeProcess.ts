/**
 * A health monitor in its own process, so what it measures is the service and not a busy test
 * process. argv[2]: interval in ms. Prints `{"ready": true}`; on the stdin line `probe <origin>`
 * polls `GET <origin>/api/health` on a new connection each time without waiting for the previous
 * answer, and prints one line
 * `{"answer": {"at", "ms", "status"}}` per answer (`at` is wall-clock ms, sub-ms precision).
 * On the stdin line `stop` it prints `{"waiting": [ms, …], "at"}` (probes still unanswered, and when) and exits.
 */
import { get } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

const intervalMs = Number(process.argv[2] ?? 100);
let origin = '';
let timer: NodeJS.Timeout | undefined;
const waiting = new Set<number>();
const write = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);

function probe(): void {
  const started = performance.now();
  waiting.add(started);
  const req = get(`${origin}/api/health`, { agent: false, timeout: 30_000 }, (res) => {
    res.resume();
    res.on('end', () => {
      waiting.delete(started);
      const now = performance.now();
      write({ answer: { at: performance.timeOrigin + now, ms: now - started, status: res.statusCode ?? 0 } });
    });
  });
  req.on('timeout', () => req.destroy(new Error('probe timed out')));
  req.on('error', () => waiting.delete(started));
}

write({ ready: true });
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, arg] = line.trim().split(' ');
  if (command === 'probe' && arg && !timer) {
    origin = arg;
    timer = setInterval(probe, intervalMs);
    probe();
  }
  if (command !== 'stop') return;
  clearInterval(timer);
  const now = performance.now();
  write({ waiting: [...waiting].map((s) => now - s), at: performance.timeOrigin + now });
  process.exit(0);
});
