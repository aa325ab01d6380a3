/**
 * Child process of frozenClaimer.test.ts: one instance's claim on the PostgreSQL database DB_URL,
 * through the service's own pool (the config it loads from the environment, `openConfiguredDatabase`),
 * caught inside its transaction: the claim (which takes the claim lock every instance's claim takes
 * turns on) runs, then the transaction stays open and the process prints `{"holding": true}` and
 * waits, to be frozen with SIGSTOP there — as a process stalls mid-transaction (stopped, swapped
 * out, a long pause). On SIGUSR2 (after SIGCONT) it runs one more statement in that transaction and
 * prints how the transaction ended, `{"ended": "<error message>"}` or `{"ended": "committed"}`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../../../src/config/config.js';
import { openConfiguredDatabase } from '../../../src/db/database.js';
import { claimDueDeliveries } from '../../../src/webhooks/sql/claimDeliveries.js';

const config = loadConfig({ ...process.env, DATABASE_URL: process.env.DB_URL, DATA_DIR: mkdtempSync(join(tmpdir(), 'frozen-claimer-')), LOG_LEVEL: 'silent' });
const { db, close } = openConfiguredDatabase(config);
// (A signal listener does not keep the process running once its connections are gone: a timer does.)
const alive = setInterval(() => undefined, 1_000);
const resumed = new Promise((resolve) => process.once('SIGUSR2', resolve));
const ended = await db
  .transaction()
  .execute(async (trx) => {
    const now = Date.now();
    await claimDueDeliveries(trx, { owner: 'dsp_frozen', now, leaseMs: 60_000, limit: 1, perHostCap: 8, excludeEndpoints: [], maxAttempts: 10 });
    process.stdout.write(`${JSON.stringify({ holding: true })}\n`);
    await resumed;
    await sql`select 1`.execute(trx);
    return 'committed';
  })
  .catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
process.stdout.write(`${JSON.stringify({ ended })}\n`);
clearInterval(alive);
await close();
