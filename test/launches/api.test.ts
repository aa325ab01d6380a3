import { Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService;
let acme: string;
let globex: string;
let readOnly: string;
let admin: string;

beforeAll(async () => {
  t = await startTestService();
  acme = await t.key('acme', ['launches:write', 'launches:read']);
  globex = await t.key('globex', ['launches:write', 'launches:read']);
  readOnly = await t.key('acme', ['launches:read']);
  admin = await t.key('ops', ['admin']);
});
afterAll(async () => t.close());

const create = (key: string, json: unknown, headers: Record<string, string> = {}) => t.request('/api/launches', { method: 'POST', key, json, headers });

describe('POST /api/launches', () => {
  it('answers 202 with the launch, its steps and a Location header, and emits launch.queued', async () => {
    const res = await create(acme, launchBody());
    expect(res.status).toBe(202);
    const { launch } = (await res.json()) as { launch: Record<string, any> };
    expect(res.headers.get('location')).toBe(`/api/launches/${launch.id}`);
    expect(launch.status).toBe('queued');
    expect(launch.steps.map((s: any) => s.name)).toEqual(['create_mint', 'create_metadata', 'distribute_supply']);
    expect(launch.steps.every((s: any) => s.status === 'pending')).toBe(true);
    expect(JSON.stringify(launch)).not.toContain('whsec_');
    const events = await t.service.db.selectFrom('outbox_events').selectAll().where('launch_id', '=', launch.id).execute();
    expect(events.map((e) => [e.event, e.sequence])).toEqual([['launch.queued', 1]]);
    const stored = await t.service.db.selectFrom('launches').selectAll().where('id', '=', launch.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain('whsec_test_0123456789abcdef');
  });

  it('refuses a bad request naming every bad field and creates nothing', async () => {
    const before = await t.service.db.selectFrom('launches').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const res = await create(
      acme,
      launchBody({ ticker: 'WAY-TOO-LONG-TICKER', totalSupply: '-5', creator: 'not-a-key', allocations: { creator: 50, pool: 30 }, extra: 1, webhookUrl: 'ftp://x' }),
    );
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; details: { fields: Array<{ field: string; message: string }> } } };
    expect(error.code).toBe('invalid_request');
    const fields = error.details.fields.map((f) => f.field);
    for (const field of ['ticker', 'totalSupply', 'creator', '(body)', 'webhookUrl']) expect(fields).toContain(field);
    const after = await t.service.db.selectFrom('launches').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  it('refuses allocations that do not sum to 100 and sections without their allocation', async () => {
    const res = await create(acme, launchBody({ allocations: { creator: 70, pool: 30 } }));
    expect(res.status).toBe(400);
    const fields = ((await res.json()) as any).error.details.fields;
    expect(fields).toContainEqual({ field: 'pool', message: 'is required when allocations.pool is non-zero' });
    const sum = await create(acme, launchBody({ allocations: { creator: 60, treasury: 10 }, dao: { name: 'D', votingPeriodSeconds: 86400, quorumPercent: 10 } }));
    const sumFields = ((await sum.json()) as any).error.details.fields;
    expect(sumFields).toContainEqual({ field: 'allocations', message: 'must sum to 100' });
    expect(sumFields).toContainEqual(expect.objectContaining({ field: 'tokenStandard' }));
  });

  it('refuses a request that needs a program the chain lacks with 422 chain_capability_missing', async () => {
    const res = await create(acme, launchBody({ tokenStandard: 'spl-token' }));
    expect(res.status).toBe(422);
    const { error } = (await res.json()) as any;
    expect(error.code).toBe('chain_capability_missing');
    expect(error.details.missing[0].programId).toBe('metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s');
  });

  it('replays the first launch for the same Idempotency-Key and body, and refuses another body', async () => {
    const body = launchBody();
    const first = await create(acme, body, { 'idempotency-key': 'order-42' });
    expect(first.status).toBe(202);
    const firstId = ((await first.json()) as any).launch.id;
    const replay = await create(acme, { ...body }, { 'idempotency-key': 'order-42' });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replay.json()) as any).launch.id).toBe(firstId);
    const reused = await create(acme, { ...body, name: 'Other' }, { 'idempotency-key': 'order-42' });
    expect(reused.status).toBe(422);
    expect(((await reused.json()) as any).error.code).toBe('idempotency_key_reused');
    // Keys are per owner: another owner may use the same key.
    const other = await create(globex, body, { 'idempotency-key': 'order-42' });
    expect(other.status).toBe(202);
    expect(((await other.json()) as any).launch.id).not.toBe(firstId);
  });

  // 409 idempotency_in_progress for a request still running, and a key a crash left in progress: test/launches/idempotency.test.ts.

  it('lets an invalid request free its Idempotency-Key for a corrected retry', async () => {
    const bad = await create(acme, launchBody({ decimals: 99 }), { 'idempotency-key': 'fix-me' });
    expect(bad.status).toBe(400);
    const good = await create(acme, launchBody(), { 'idempotency-key': 'fix-me' });
    expect(good.status).toBe(202);
  });

  it('needs launches:write', async () => {
    const res = await create(readOnly, launchBody());
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.details.required_scope).toBe('launches:write');
  });
});

describe('GET /api/launches', () => {
  it("lists only the owner's launches, newest first, with the pagination block", async () => {
    for (let i = 0; i < 3; i++) expect((await create(globex, launchBody({ name: `G${i}` }))).status).toBe(202);
    const page = await t.request('/api/launches?limit=2&offset=0', { key: globex });
    expect(page.status).toBe(200);
    const body = (await page.json()) as any;
    expect(body.launches.every((l: any) => l.name.startsWith('G') || l.name === 'Demo Token')).toBe(true);
    expect(body.launches[0].name).toBe('G2');
    expect(body.pagination).toEqual({ limit: 2, offset: 0, returned: 2, total: 4, has_more: true, next_offset: 2 });
    const last = (await (await t.request('/api/launches?limit=2&offset=2', { key: globex })).json()) as any;
    expect(last.pagination).toMatchObject({ returned: 2, has_more: false, next_offset: null });
    const all = (await (await t.request('/api/launches?limit=200', { key: admin })).json()) as any;
    expect(all.pagination.total).toBeGreaterThan(4);
  });

  it('refuses a bad limit naming it', async () => {
    const res = await t.request('/api/launches?limit=500', { key: acme });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.details.fields[0].field).toBe('limit');
  });
});

describe('GET /api/launches/:id', () => {
  it("answers 404 for another owner's launch and the launch for its owner and admin", async () => {
    const created = ((await (await create(acme, launchBody({ creator: Keypair.generate().publicKey.toBase58() }))).json()) as any).launch;
    expect((await t.request(`/api/launches/${created.id}`, { key: globex })).status).toBe(404);
    const own = await t.request(`/api/launches/${created.id}`, { key: acme });
    expect(own.status).toBe(200);
    expect(((await own.json()) as any).launch.id).toBe(created.id);
    expect((await t.request(`/api/launches/${created.id}`, { key: admin })).status).toBe(200);
    expect((await t.request('/api/launches/lch_missing', { key: acme })).status).toBe(404);
  });
});
