import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { IN_PROGRESS_ABANDONED_MS, requestHash, requestHashKey } from '../../src/launches/idempotency.js';
import { createLaunchSubmitter, type SubmitLaunchDeps } from '../../src/launches/submitLaunch.js';
import { ConflictError } from '../../src/lib/errors.js';
import { silentLogger } from '../../src/lib/logger.js';
import { launchBody } from '../support/fixtures.js';
import { onPostgres } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * When a crashed process's key was claimed: on SQLite the process that owns the file knows at once
 * that no request of its own holds the key; on PostgreSQL another instance might, so the key is
 * free only once it is IN_PROGRESS_ABANDONED_MS old.
 */
const crashedAt = (now: number) => (onPostgres ? now - IN_PROGRESS_ABANDONED_MS : now);

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function submitter(overrides: Partial<SubmitLaunchDeps> = {}) {
  t = await startTestService();
  const { db } = t.service;
  const hashKey = requestHashKey(t.config.secretKey);
  const deps: SubmitLaunchDeps = {
    db,
    clock: { now: () => Date.now() },
    secretBox: createSecretBox(randomBytes(32)),
    signal: { notify: () => undefined },
    production: false,
    requestHashKey: hashKey,
    checkCapabilities: async () => undefined,
    ...overrides,
  };
  const launches = async () => (await db.selectFrom('launches').select('id').execute()).map((r) => r.id);
  return { db, hashKey, submit: createLaunchSubmitter(deps), launches };
}

const input = (body: unknown, key: string) => ({ owner: 'acme', body, idempotencyKey: key, requestId: 'req_1', logger: silentLogger() });

describe('Idempotency-Key', () => {
  it('never un-keys a committed launch: a failure after the commit leaves the key pointing at it, and a retry replays it', async () => {
    let failAfterCommit = true;
    const s = await submitter({
      signal: {
        notify() {
          if (failAfterCommit) {
            failAfterCommit = false;
            throw new Error('wake-up failed after the commit');
          }
        },
      },
    });
    const body = launchBody();
    await expect(s.submit(input(body, 'key-1'))).rejects.toThrow('wake-up failed');
    const again = await s.submit(input(body, 'key-1'));
    expect(again.kind).toBe('replayed');
    expect(await s.launches()).toEqual([again.launch.id]);
  });

  it('frees a key a crash left in progress: the next request with it creates the launch', async () => {
    const s = await submitter();
    const body = launchBody();
    const now = Date.now();
    // What a process killed between claiming the key and creating the launch leaves behind.
    await s.db
      .insertInto('idempotency_keys')
      .values({ owner: 'acme', key: 'key-2', request_hash: requestHash(body, s.hashKey), state: 'in_progress', launch_id: null, response_status: null, created_at: crashedAt(now), expires_at: now + 86_400_000 })
      .execute();
    const outcome = await s.submit(input(body, 'key-2'));
    expect(outcome.kind).toBe('created');
    expect(await s.launches()).toEqual([outcome.launch.id]);
    expect((await s.submit(input(body, 'key-2'))).kind).toBe('replayed');
  });

  it('answers 409 idempotency_in_progress while the first request with the key is still running', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const s = await submitter({ checkCapabilities: () => gate.then(() => undefined) });
    const body = launchBody();
    const first = s.submit(input(body, 'key-3'));
    await new Promise((resolve) => setImmediate(resolve));
    await expect(s.submit(input(body, 'key-3'))).rejects.toMatchObject({ constructor: ConflictError, code: 'idempotency_in_progress' });
    release();
    expect((await first).kind).toBe('created');
    expect(await s.launches()).toHaveLength(1);
  });

  it('over HTTP: a key left in progress by a crash no longer answers 409 for 24 hours', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const body = launchBody();
    const now = Date.now();
    await t.service.db
      .insertInto('idempotency_keys')
      .values({ owner: 'acme', key: 'key-4', request_hash: requestHash(body, requestHashKey(t.config.secretKey)), state: 'in_progress', launch_id: null, response_status: null, created_at: crashedAt(now), expires_at: now + 86_400_000 })
      .execute();
    const res = await t.request('/api/launches', { method: 'POST', key, json: body, headers: { 'idempotency-key': 'key-4' } });
    expect(res.status).toBe(202);
    const replay = await t.request('/api/launches', { method: 'POST', key, json: body, headers: { 'idempotency-key': 'key-4' } });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });
});
