import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEndpoint, deleteEndpoint, updateEndpoint } from '../../src/webhooks/endpoints/endpoints.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { commitEvents, createTestDb, engineConfig, insertLaunch, newSecretBox, startReceiver, type Receiver, type TestDb } from '../support/webhooks.js';

/**
 * An attempt that is out while its owner deletes (cancels) or disables (pauses) the endpoint settles
 * against what the delivery is by then (docs/webhooks.md): a canceled delivery stays canceled, a
 * paused one is never failed nor dead-lettered behind its owner's back.
 */
describe('settling an attempt after its delivery was canceled or paused', () => {
  let tdb: TestDb;
  let launchReceiver: Receiver;
  let server: Server;
  let url: string;
  /** What the endpoint does while a request is open, before it answers `status`. */
  let during: () => Promise<unknown> = async () => undefined;
  let status = 200;
  let received = 0;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();

  beforeEach(async () => {
    tdb = await createTestDb();
    launchReceiver = await startReceiver(clock, '/launch');
    received = 0;
    during = async () => undefined;
    // Answers only once `during` (the owner's change) has committed: the attempt is out meanwhile.
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received += 1;
        void during().then(() => res.writeHead(status).end('ok'));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterEach(async () => {
    await launchReceiver.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await tdb.close();
  });

  async function setup(schedule: number[]) {
    const deps = { db: tdb.db, clock, secretBox: box };
    const { endpoint } = await createEndpoint(deps, 'acme', { url, events: ['*'], description: null, signatureScheme: 'standard' });
    const engine = createWebhookEngine({ db: tdb.db, clock, logger: silentLogger(), config: engineConfig({ webhooks: { retrySchedule: schedule }, breaker: { failureThreshold: 1_000 } }), secretBox: box });
    const launchId = await insertLaunch(tdb.db, clock, { url: launchReceiver.url, secret: 's', box });
    await commitEvents(tdb.db, clock, launchId, 1);
    const state = async () => {
      const delivery = await tdb.db.selectFrom('deliveries').select(['id', 'status', 'lease_owner', 'attempt_count']).where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow();
      const attempts = await tdb.db.selectFrom('delivery_attempts').select(['attempt', 'outcome']).where('delivery_id', '=', delivery.id).orderBy('attempt').execute();
      const dead = await tdb.db.selectFrom('dead_letters').select('id').where('delivery_id', '=', delivery.id).execute();
      return { status: delivery.status, leased: delivery.lease_owner !== null, attemptCount: delivery.attempt_count, attempts: attempts.map((a) => a.outcome), deadLetters: dead.length };
    };
    return { deps, endpoint, engine, state };
  }

  it('a success that lands after the endpoint was deleted leaves the delivery canceled', async () => {
    const { deps, endpoint, engine, state } = await setup([0, 30_000]);
    during = () => deleteEndpoint(deps, endpoint.id, 'acme');
    status = 200;
    await engine.dispatcher.runOnce();
    await engine.stop();
    expect(received).toBe(1);
    expect(await state()).toEqual({ status: 'canceled', leased: false, attemptCount: 1, attempts: ['success'], deadLetters: 0 });
  });

  it('a failed last attempt that lands after the endpoint was deleted neither fails nor dead-letters the canceled delivery', async () => {
    const { deps, endpoint, engine, state } = await setup([0]);
    during = () => deleteEndpoint(deps, endpoint.id, 'acme');
    status = 500;
    await engine.dispatcher.runOnce();
    await engine.stop();
    expect(await state()).toEqual({ status: 'canceled', leased: false, attemptCount: 1, attempts: ['failure'], deadLetters: 0 });
  });

  it('a failed attempt that lands after the endpoint was deleted is not retried', async () => {
    const { deps, endpoint, engine, state } = await setup([0, 1_000, 1_000]);
    during = () => deleteEndpoint(deps, endpoint.id, 'acme');
    status = 500;
    await engine.dispatcher.runOnce();
    during = async () => undefined;
    clock.advance(10_000);
    await engine.dispatcher.runOnce();
    await engine.stop();
    expect(received).toBe(1);
    expect(await state()).toEqual({ status: 'canceled', leased: false, attemptCount: 1, attempts: ['failure'], deadLetters: 0 });
  });

  it('a failed last attempt that lands after the endpoint was disabled keeps the delivery paused, and it is tried again once enabled', async () => {
    const { deps, endpoint, engine, state } = await setup([0]);
    during = () => updateEndpoint(deps, endpoint.id, 'acme', { disabled: true });
    status = 500;
    await engine.dispatcher.runOnce();
    expect(await state()).toEqual({ status: 'paused', leased: false, attemptCount: 0, attempts: ['failure'], deadLetters: 0 });
    // While paused nothing goes out.
    clock.advance(10_000);
    await engine.dispatcher.runOnce();
    expect(received).toBe(1);
    // Enabled: the kept attempt goes out, and only its failure ends the delivery with a dead letter.
    during = async () => undefined;
    await updateEndpoint(deps, endpoint.id, 'acme', { disabled: false });
    await engine.dispatcher.runOnce();
    await engine.stop();
    expect(received).toBe(2);
    expect(await state()).toEqual({ status: 'failed', leased: false, attemptCount: 1, attempts: ['failure', 'failure'], deadLetters: 1 });
  });

  it('a success that lands after the endpoint was disabled marks the delivery delivered (it arrived), not sent again once enabled', async () => {
    const { deps, endpoint, engine, state } = await setup([0, 30_000]);
    during = () => updateEndpoint(deps, endpoint.id, 'acme', { disabled: true });
    status = 200;
    await engine.dispatcher.runOnce();
    during = async () => undefined;
    await updateEndpoint(deps, endpoint.id, 'acme', { disabled: false });
    await engine.dispatcher.runOnce();
    await engine.stop();
    expect(received).toBe(1);
    expect(await state()).toEqual({ status: 'delivered', leased: false, attemptCount: 1, attempts: ['success'], deadLetters: 0 });
  });
});
