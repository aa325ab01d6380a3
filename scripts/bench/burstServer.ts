/**
 * Child process of the `burst` benchmark: the whole service served as `npm start` serves it
 * (src/app/serve.ts: health report made, port bound, then the workers; the health fast path and the
 * socket bounds) over the data directory BENCH_DIR with BENCH_SECRET_KEY (base64), on BENCH_PORT
 * (0 for any), so the parent can prepare the database and the child owns the CPU of a service.
 * BENCH_CLOCK_OFFSET_MS moves its clock forward (a restart standing for time past a killed
 * process's leases). Prints `{"port": N}` once listening; logs errors (JSON, to stderr: stdout carries
 * the port line); exits on SIGTERM.
 */
import { serveService } from '../../src/app/serve.js';
import { createService } from '../../src/app/service.js';
import { destination, pino } from 'pino';
import { benchConfig } from './config.js';

const offset = Number(process.env.BENCH_CLOCK_OFFSET_MS ?? 0);
const clock = { now: () => Date.now() + offset };
const config = benchConfig(process.env.BENCH_DIR ?? '', Buffer.from(process.env.BENCH_SECRET_KEY ?? '', 'base64'));
const service = await createService(config, { logger: pino({ level: 'error' }, destination(process.env.BENCH_ERR_LOG ?? 2)), clock });
const { server, port } = await serveService(service, { port: Number(process.env.BENCH_PORT ?? 0), hostname: '127.0.0.1', limits: config.http });
service.start();
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.on('SIGTERM', () => {
  server.close();
  void service.stop().finally(() => process.exit(0));
});
