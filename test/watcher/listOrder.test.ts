import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair } from '@solana/web3.js';
import { systemClock } from '../../src/lib/clock.js';
import { insertWatches, listWatches, type WatchRow } from '../../src/watcher/store.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

// A launch's watches as the API shows them (GET /api/launches/:id): one order on every read and both
// databases, even when watches share their creation time and kind (a launch's vesting escrows).
describe('a launch’s watches in the API view', () => {
  let t: TestDb;
  let launchId: string;

  beforeAll(async () => {
    t = await createTestDb();
    launchId = await insertLaunch(t.db, systemClock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_0123456789abcdef0123', box: newSecretBox() });
  });
  afterAll(async () => t.close());

  it('lists watches that tie on creation time and kind by id, whatever order they were written in', async () => {
    const now = Date.now();
    const addresses = Array.from({ length: 6 }, () => Keypair.generate().publicKey.toBase58());
    await insertWatches(t.db, { launchId, now, ttlMs: 60_000, watches: addresses.map((address) => ({ kind: 'vesting' as const, address, context: {} })) });
    // Renumber them so that the first written has the largest id: storage order is then the reverse of id order.
    const watches = t.db.withTables<{ watches: WatchRow }>();
    const rows = await watches.selectFrom('watches').select(['id', 'address']).where('launch_id', '=', launchId).execute();
    const byAddress = new Map(rows.map((r) => [r.address, r.id]));
    for (const [i, address] of addresses.entries()) {
      await watches.updateTable('watches').set({ id: `wch_order_${String(addresses.length - i).padStart(2, '0')}` }).where('id', '=', byAddress.get(address)!).execute();
    }
    const listed = (await listWatches(t.db, launchId)).map((w) => w.address);
    expect(listed).toEqual([...addresses].reverse());
    expect(await listWatches(t.db, launchId)).toEqual(await listWatches(t.db, launchId));
  });
});
