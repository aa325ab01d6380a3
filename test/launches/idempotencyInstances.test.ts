import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IN_PROGRESS_ABANDONED_MS, requestHash, requestHashKey } from '../../src/launches/idempotency.js';
import { launchBody } from '../support/fixtures.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

const ROUNDS = 12;

// Two instances on one PostgreSQL database (the SQLite half has one process per file).
describe.skipIf(!onPostgres)('Idempotency-Key across instances', () => {
  let database: { url: string; drop(): Promise<void> };
  let a: TestService;
  let b: TestService;
  let key: string;
  const secret = Buffer.alloc(32, 7).toString('base64');

  beforeAll(async () => {
    database = await createPostgresDatabase();
    a = await startTestService({ env: { DATABASE_URL: database.url, SECRET_KEY: secret } });
    key = await a.key('acme', ['launches:write', 'launches:read']);
    // The owner's funding wallet is created and airdropped on a's embedded chain; b starts from that
    // chain's file, so both see the wallet funded (neither runs launches: only creation is tested).
    await a.createLaunch(key);
    b = await startTestService({ env: { DATABASE_URL: database.url, SECRET_KEY: secret }, embeddedChainFile: join(a.dir, 'chain.sqlite') });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  it('gives one launch for a key sent to two instances at the same moment; each answer names it or is 409 idempotency_in_progress', async () => {
    for (let round = 0; round < ROUNDS; round += 1) {
      const body = launchBody();
      const headers = { 'idempotency-key': `same-moment-${round}` };
      const answers = await Promise.all([a, b].map((t) => t.request('/api/launches', { method: 'POST', key, json: body, headers })));
      const launches = await a.service.db.selectFrom('idempotency_keys').innerJoin('launches', 'launches.id', 'idempotency_keys.launch_id').select('launches.id').where('idempotency_keys.key', '=', headers['idempotency-key']).execute();
      const requests = await a.service.db.selectFrom('launches').select('id').where('request', 'like', `%${body.creator as string}%`).execute();
      expect(requests, `round ${round}: launches created`).toHaveLength(1);
      expect(launches.map((l) => l.id)).toEqual([requests[0]!.id]);
      for (const answer of answers) {
        const json = (await answer.json()) as { launch?: { id: string }; error?: { code: string } };
        if (answer.status === 202) expect(json.launch?.id).toBe(requests[0]!.id);
        else expect([answer.status, json.error?.code]).toEqual([409, 'idempotency_in_progress']);
      }
      expect(answers.some((r) => r.status === 202)).toBe(true);
      // Once the first answered, the other instance replays the same launch.
      const replay = await b.request('/api/launches', { method: 'POST', key, json: body, headers });
      expect(replay.status).toBe(202);
      expect(((await replay.json()) as { launch: { id: string } }).launch.id).toBe(requests[0]!.id);
    }
  });

  it('does not take over a key another instance is still working on, and frees one a dead instance left once it is old', async () => {
    const body = launchBody();
    const now = Date.now();
    const hash = requestHash(body, requestHashKey(Buffer.from(secret, 'base64')));
    // In progress on some instance (it is not this one's request): fresh, it is another's work.
    await a.service.db
      .insertInto('idempotency_keys')
      .values({ owner: 'acme', key: 'held', request_hash: hash, state: 'in_progress', launch_id: null, response_status: null, created_at: now, expires_at: now + 86_400_000 })
      .execute();
    const held = await b.request('/api/launches', { method: 'POST', key, json: body, headers: { 'idempotency-key': 'held' } });
    expect(held.status).toBe(409);
    expect(((await held.json()) as { error: { code: string } }).error.code).toBe('idempotency_in_progress');
    await a.service.db.updateTable('idempotency_keys').set({ created_at: now - IN_PROGRESS_ABANDONED_MS }).where('key', '=', 'held').execute();
    const taken = await b.request('/api/launches', { method: 'POST', key, json: body, headers: { 'idempotency-key': 'held' } });
    expect(taken.status).toBe(202);
  });
});
