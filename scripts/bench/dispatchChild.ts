/**
 * Child process of the `postgres` benchmark: one instance's webhook engine on the PostgreSQL
 * database BENCH_DATABASE_URL (the service's defaults, silent logs). Prints `{"ready": true}` once
 * built, starts its dispatcher on a `go` line on stdin, and stops (settling what is in flight) and
 * exits on SIGTERM. BENCH_CHILD_ENV (JSON, optional): more service variables for a measurement by
 * hand, e.g. `{"WEBHOOK_PREFETCH_PER_HOST":"0"}`; the scenario sets none.
 */
import { createInterface } from 'node:readline';
import { openPostgres } from '../../src/db/database.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { benchConfig } from './config.js';

/** In flight to the bench's one host: the peer's best concurrency (`PEER_CONCURRENCIES` in postgres.ts). */
const BENCH_IN_FLIGHT_PER_HOST = 32;

const secretKey = Buffer.from(process.env.BENCH_SECRET_KEY ?? '', 'base64');
// The peer's best run is at concurrency 32 to its one host: ours gets the same 32 in flight to that
// host (the shipped per-host cap is 8), so the two compare at equal concurrency.
const config = benchConfig(process.env.DATA_DIR ?? '', secretKey, { WEBHOOK_MAX_IN_FLIGHT_PER_HOST: String(BENCH_IN_FLIGHT_PER_HOST), ...JSON.parse(process.env.BENCH_CHILD_ENV || '{}') });
const { db, close } = openPostgres(process.env.BENCH_DATABASE_URL ?? '', { poolSize: 10 });
const engine = createWebhookEngine({ db, clock: systemClock, logger: silentLogger(), config, secretBox: createSecretBox(secretKey) });
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'go') engine.start();
});
process.on('SIGTERM', () => {
  void engine
    .stop()
    .then(() => close())
    .then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
