/**
 * Child process of the `postgres` benchmark's pipeline: one service instance served as `npm start`
 * serves it (startHttpServer with the health fast path and the socket bounds, port 0), with the bench
 * configuration plus BENCH_ENV (JSON: DATABASE_URL, SOLANA_RPC_URL, …). Prints `{"port": N}` once
 * listening; exits on SIGTERM.
 */
import { createService } from '../../src/app/service.js';
import { systemClock } from '../../src/lib/clock.js';
import { startHttpServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/lib/logger.js';
import { benchConfig } from './config.js';

const env = JSON.parse(process.env.BENCH_ENV ?? '{}') as Record<string, string>;
const config = benchConfig(process.env.BENCH_DIR ?? '', Buffer.from(process.env.BENCH_SECRET_KEY ?? '', 'base64'), env);
const service = await createService(config, { logger: silentLogger(), clock: systemClock });
service.start();
const { server, port } = await startHttpServer({ fetch: service.app.fetch, fastPath: service.fastPath, port: 0, hostname: '127.0.0.1', limits: config.http });
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.on('SIGTERM', () => {
  server.close();
  void service.stop().finally(() => process.exit(0));
});
