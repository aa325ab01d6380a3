/**
 * Child process of the `backlog-memory` benchmark: the whole service on a prepared DATA_DIR
 * (whose outbox may hold a large backlog to a host with an open breaker), running for
 * BENCH_RUN_MS with a fast poll, serving /api/health. Prints `{"ready": true}` after start and
 * `{"maxRssBytes": N}` before exiting; RSS is this process's own.
 */
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createService } from '../../src/app/service.js';
import { benchConfig } from './config.js';

const dataDir = process.env.DATA_DIR ?? '';
const secretKey = Buffer.from(process.env.BENCH_SECRET_KEY ?? '', 'base64');
const runMs = Number(process.env.BENCH_RUN_MS ?? 5000);
const service = await createService(benchConfig(dataDir, secretKey, { WEBHOOK_POLL_INTERVAL_MS: '50ms' }), { logger: silentLogger(), clock: systemClock });
service.start();
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
const deadline = Date.now() + runMs;
let healthChecks = 0;
while (Date.now() < deadline) {
  // Health lists the breakers and the dispatcher keeps polling: both must stay flat with the backlog.
  const res = await service.app.request('/api/health');
  await res.arrayBuffer();
  healthChecks += 1;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await service.stop();
process.stdout.write(`${JSON.stringify({ maxRssBytes: process.resourceUsage().maxRSS * 1024, healthChecks })}\n`);
