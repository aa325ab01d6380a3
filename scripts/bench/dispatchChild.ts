/**
 * Child process of the `postgres` benchmark: one instance's webhook engine on the PostgreSQL
 * database BENCH_DATABASE_URL (the service's defaults, silent logs). Prints `{"ready": true}` once
 * built, starts its dispatcher on a `go` line on stdin, and stops (settling what is in flight) and
 * exits on SIGTERM.
 */
import { createInterface } from 'node:readline';
import { openPostgres } from '../../src/db/database.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { benchConfig } from './config.js';

const secretKey = Buffer.from(process.env.BENCH_SECRET_KEY ?? '', 'base64');
const config = benchConfig(process.env.DATA_DIR ?? '', secretKey);
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
