/**
 * Child process of the `health` benchmark, so the server has its own core and the load generator
 * the other. argv[2]: `service` (the whole service, served as `npm start` serves it) or `bare` (node:http
 * answering BENCH_HEALTH_BODY with BENCH_HEALTH_HEADERS). Prints `{"port": N}` once listening; exits on SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createService } from '../../src/app/service.js';
import { startHttpServer } from '../../src/http/server.js';
import { benchConfig } from './config.js';

const mode = process.argv[2];
const ready = (port: number) => process.stdout.write(`${JSON.stringify({ port })}\n`);

if (mode === 'bare') {
  const body = process.env.BENCH_HEALTH_BODY ?? '{}';
  const headers = JSON.parse(process.env.BENCH_HEALTH_HEADERS ?? '{"content-type":"application/json"}') as Record<string, string>;
  const server = createServer((_req, res) => {
    res.writeHead(200, headers).end(body);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
} else {
  const dir = mkdtempSync(join(tmpdir(), 'bench-health-'));
  const config = benchConfig(dir, randomBytes(32));
  const service = await createService(config, { logger: silentLogger(), clock: systemClock });
  service.start();
  // The server `npm start` runs (src/app/main.ts): its socket bounds and the health fast path
  // (BENCH_HEALTH_NO_FAST_PATH=1 leaves the fast path out, for A/B runs).
  const fastPath = process.env.BENCH_HEALTH_NO_FAST_PATH ? undefined : service.fastPath;
  const { server, port } = await startHttpServer({ fetch: service.app.fetch, fastPath, port: 0, hostname: '127.0.0.1', limits: config.http });
  ready(port);
  const shutdown = () => {
    server.close();
    void service.stop().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
