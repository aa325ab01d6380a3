import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { manualClock } from '../../src/lib/clock.js';
import { passLeaseTime } from '../support/database.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { commitEvents, createTestDb, insertLaunch, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

const EVENTS = 300;
const worker = fileURLToPath(new URL('./support/dispatchWorker.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

async function waitFor(predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('crash safety', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    await receiver.close();
    await tdb.close();
  });

  it('delivers every committed event at least once after the dispatcher process is SIGKILLed mid-delivery', async () => {
    const clock = manualClock(Date.now());
    receiver = await startReceiver(clock);
    receiver.respond = () => ({ status: 200, delayMs: 10 });
    const key = randomBytes(32);
    const box = createSecretBox(key);
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: 'whsec_crash', box });
    const eventIds = await commitEvents(tdb.db, clock, launchId, EVENTS);

    const child = spawn(process.execPath, ['--import', 'tsx', worker], {
      cwd: repoRoot,
      env: { ...process.env, DB_PATH: tdb.path, SECRET_KEY: key.toString('base64') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    try {
      await waitFor(() => receiver.requests.length >= 80, 20_000);
    } catch (error) {
      child.kill('SIGKILL');
      throw new Error(`worker made no progress: ${stderr}`, { cause: error });
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const before = await tdb.db.selectFrom('deliveries').select(['status', 'lease_owner']).execute();
    const deliveredBefore = before.filter((d) => d.status === 'delivered').length;
    expect(deliveredBefore).toBeLessThan(EVENTS); // killed mid-delivery
    expect(before.some((d) => d.status === 'pending' && d.lease_owner !== null)).toBe(true); // leases it held when it died

    // Restart: a new engine on the same file, its clock past the dead worker's 2 s leases.
    clock.set(Date.now());
    await passLeaseTime(tdb.db, clock, 60_000);
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { maxInFlight: 32, maxInFlightPerHost: 16 } }), secretBox: box });
    await engine.dispatcher.drain();
    await engine.stop();

    const received = new Set(receiver.requests.map((r) => String(r.headers['x-service-event-id'])));
    expect(received).toEqual(new Set(eventIds));
    const after = await tdb.db.selectFrom('deliveries').select('status').execute();
    expect(after.filter((d) => d.status === 'delivered')).toHaveLength(EVENTS);
    // Duplicates only for what was in flight at the kill (at most the worker's in-flight cap).
    expect(receiver.requests.length - EVENTS).toBeLessThanOrEqual(16);
  });
});
