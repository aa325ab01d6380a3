/**
 * Runs the graduation job on an existing data directory in a real process that kills itself with
 * SIGKILL at a chosen instant of the migration, so the crash test resumes from each dangerous point.
 * env: DATA_DIR, SECRET_KEY, CHAIN_PROGRAMS_DIR, RUNNER_LEASE_MS (short), CRASH_AT =
 *   record — right after the signed migration transaction is recorded, before it is sent
 *   sent   — right after it was sent (executed on the chain), before it is confirmed and committed
 *   (empty) — run until the graduation is done
 * Prints one JSON line `{"sent": n}` once no graduation is due.
 */
import { loadConfig } from '../../../src/config/config.js';
import { migrateToLatest, openDatabase } from '../../../src/db/database.js';
import { systemClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { createChainBackend } from '../../../src/app/serviceChain.js';
import type { ChainBackend } from '../../../src/chain/backend.js';
import { createSecretBox } from '../../../src/crypto/secretBox.js';
import { createFunding } from '../../../src/funding/funding.js';
import { launchKeySecret } from '../../../src/launches/chainStepRunner.js';
import { Graduator } from '../../../src/watcher/graduation/graduator.js';

const point = process.env.CRASH_AT ?? '';
const die = (where: string) => {
  process.stdout.write(`crashing at ${where}\n`);
  process.kill(process.pid, 'SIGKILL');
};

const config = loadConfig();
const logger = silentLogger();
const { db } = openDatabase(config.databasePath);
await migrateToLatest(db);
const base = await createChainBackend(config, { db, clock: systemClock, logger });
const chain: ChainBackend = Object.assign(Object.create(Object.getPrototypeOf(base) as object) as ChainBackend, base, {
  async sendRawTransaction(bytes: Uint8Array) {
    const signature = await base.sendRawTransaction(bytes);
    if (point === 'sent') die('sent');
    return signature;
  },
});
const funding = createFunding({ db, chain: base, secretBox: createSecretBox(config.secretKey), clock: systemClock, logger, devAirdropLamports: 0 });
const graduator = new Graduator({
  db,
  clock: systemClock,
  logger,
  chain,
  keySecret: launchKeySecret(config.secretKey),
  funding,
  signal: { notify: () => undefined },
  leaseMs: config.runner.leaseMs,
  beforeSend: () => {
    if (point === 'record') die('record');
  },
});
// A killed process's lease expires after RUNNER_LEASE_MS: keep claiming until the graduation is done.
const deadline = Date.now() + 60_000;
for (;;) {
  await graduator.runOnce();
  const row = await db.selectFrom('curve_migrations' as never).select(['state' as never]).executeTakeFirst() as { state: string } | undefined;
  if (row?.state !== 'due' || Date.now() > deadline) break;
  await new Promise((r) => setTimeout(r, 100));
}
process.stdout.write(`${JSON.stringify({ sent: graduator.sent })}\n`);
await base.close();
process.exit(0);
