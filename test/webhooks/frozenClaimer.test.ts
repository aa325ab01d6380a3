import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { onPostgres } from '../support/database.js';
import { commitEvents, createTestDb, engineConfig, insertLaunch, startReceiver, type Receiver, type TestDb } from '../support/webhooks.js';

// docs/architecture.md, SQLite and PostgreSQL: instances on one PostgreSQL database take turns on one claim lock (a transaction-scoped
// advisory lock, src/webhooks/sql/claimDeliveries.ts). An instance frozen inside its claim's
// transaction — a real process stopped with SIGSTOP — must not stop every other instance's
// deliveries: the server ends a session idle inside a transaction after
// DATABASE_IDLE_TRANSACTION_TIMEOUT, and its locks with it. PostgreSQL only.
if (!onPostgres) console.log('frozenClaimer.test.ts: skipped, no TEST_DATABASE_URL (PostgreSQL) set');

const claimer = fileURLToPath(new URL('./support/frozenClaimer.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const IDLE_TIMEOUT_MS = 1_500;

describe.skipIf(!onPostgres)('an instance frozen inside its claim on PostgreSQL', () => {
  let tdb: TestDb;
  let receiver: Receiver | undefined;
  let child: ChildProcess | undefined;
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    await receiver?.close();
    await tdb.close();
  });

  it("does not hold the other instances' deliveries: the server ends its session and the others claim", async () => {
    receiver = await startReceiver(systemClock);
    const box = createSecretBox(randomBytes(32));
    const launchId = await insertLaunch(tdb.db, systemClock, { url: receiver.url, secret: 'whsec_frozen', box });
    const eventIds = await commitEvents(tdb.db, systemClock, launchId, 5);

    child = spawn(process.execPath, ['--import', 'tsx', claimer], {
      cwd: repoRoot,
      env: { ...process.env, DB_URL: tdb.path, DATABASE_IDLE_TRANSACTION_TIMEOUT: `${IDLE_TIMEOUT_MS}ms` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | string | null>((resolve) => child!.on('exit', (code, signal) => resolve(signal ?? code)));
    const lines: string[] = [];
    const waiters: Array<() => void> = [];
    createInterface({ input: child.stdout! }).on('line', (line) => (lines.push(line), waiters.splice(0).forEach((w) => w())));
    const nextLine = async () => {
      while (lines.length === 0) {
        await Promise.race([
          new Promise<void>((resolve) => waiters.push(resolve)),
          exited.then((how) => {
            throw new Error(`the claimer exited (${how}): ${stderr}`);
          }),
        ]);
      }
      return JSON.parse(lines.shift()!) as Record<string, unknown>;
    };
    expect(await nextLine()).toEqual({ holding: true });
    // Frozen mid-transaction, holding the claim lock (and the one delivery it leased).
    child.kill('SIGSTOP');

    const engine = createWebhookEngine({ db: tdb.db, clock: systemClock, logger: silentLogger(), config: engineConfig(), secretBox: box });
    engine.start();
    try {
      const deadline = Date.now() + 20_000;
      while (receiver.requests.length < eventIds.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      // Every event arrived while the claimer stayed frozen, the one it had leased too: its
      // transaction ended with its session, uncommitted.
      const received = new Set(receiver.requests.map((r) => String(r.headers['x-service-event-id'])));
      expect(received, 'events delivered while the other instance is frozen inside its claim').toEqual(new Set(eventIds));
      expect(child.signalCode ?? child.exitCode, 'the claimer stayed frozen').toBeNull();

      // Woken, the stalled process carries on: its transaction has ended (the next statement says
      // so) and the process is still running, not brought down by its connection's end.
      child.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, 300));
      child.kill('SIGUSR2');
      const { ended } = await nextLine();
      expect(ended).not.toBe('committed');
      expect(String(ended)).toMatch(/terminat|idle-in-transaction|idle_in_transaction|Connection terminated|not queryable/i);
      expect(await exited).toBe(0);
    } finally {
      // A claim still waiting on the frozen one's lock returns once that process is gone.
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await engine.stop();
    }
  }, 40_000);
});
