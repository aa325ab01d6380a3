import { createHash } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, requestHash, requestHashKey, upgradeLegacyRequestHashes } from '../../src/launches/idempotency.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

type Json = Record<string, any>;

let t: TestService;
let key: string;
let admin: string;

beforeAll(async () => {
  t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
  key = await t.key('acme', ['launches:write', 'launches:read']);
  admin = await t.key('ops', ['admin']);
});
afterAll(async () => {
  await t?.close();
});

const count = async (table: 'launches' | 'chain_signatures' | 'outbox_events') =>
  Number((await t.service.db.selectFrom(table as 'launches').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

async function create(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Json }> {
  const res = await t.request('/api/launches', { method: 'POST', key, headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Json };
}

/** Sends a request and expects a 400 naming `field`, with nothing created and nothing sent to the chain. */
async function expectRefused(body: unknown, field: string): Promise<string> {
  const before = { launches: await count('launches'), signatures: await count('chain_signatures'), events: await count('outbox_events') };
  const res = await create(body);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  const fields = res.body.error.details.fields as Array<{ field: string; message: string }>;
  const hit = fields.find((f) => f.field === field);
  expect(hit, JSON.stringify(fields)).toBeDefined();
  expect({ launches: await count('launches'), signatures: await count('chain_signatures'), events: await count('outbox_events') }).toEqual(before);
  return hit!.message;
}

const pk = () => Keypair.generate().publicKey.toBase58();
const WSOL = 'So11111111111111111111111111111111111111112';

describe('text that reaches the chain', () => {
  it('refuses a lone surrogate in name, uri and dao.name (it would mint and then fail create_metadata)', async () => {
    expect(await expectRefused(launchBody({ name: 'Demo \ud800 Token' }), 'name')).toMatch(/well-formed Unicode/);
    expect(await expectRefused(launchBody({ uri: 'https://example.com/\udc00.json' }), 'uri')).toMatch(/control|bidirectional|spaces/);
    const dao = launchBody({ tokenStandard: 'spl-token', allocations: { creator: 50, treasury: 50 }, dao: { name: 'DAO \udbff', votingPeriodSeconds: 3600, quorumPercent: 10 } });
    expect(await expectRefused(dao, 'dao.name')).toMatch(/well-formed Unicode/);
  });

  it('refuses control characters and bidirectional overrides, isolates and marks', async () => {
    for (const name of ['Demo\u0000Token', 'Demo\u0007', 'Demo\u009bToken', 'Demo\u202eTOKEN', 'Demo\u2066x\u2069', 'Demo\u200fToken', 'Demo\u061c', 'Demo\u2028Token']) {
      expect(await expectRefused(launchBody({ name }), 'name')).toMatch(/control or bidirectional/);
    }
    const dao = launchBody({ tokenStandard: 'spl-token', allocations: { creator: 50, treasury: 50 }, dao: { name: 'gnp\u202eDAO', votingPeriodSeconds: 3600, quorumPercent: 10 } });
    expect(await expectRefused(dao, 'dao.name')).toMatch(/bidirectional/);
  });

  it('accepts only https, ipfs and ar metadata URIs a wallet can fetch', async () => {
    for (const uri of ['javascript:alert(1)', 'http://example.com/a.json', 'data:application/json,{}', 'file:///etc/passwd', 'not a url', 'https://', 'ftp://example.com/x', 'https://user:pw@example.com/x']) {
      expect(await expectRefused(launchBody({ uri }), 'uri'), uri).toMatch(/https:\/\/, ipfs:\/\/ or ar:\/\/|spaces/);
    }
    for (const uri of ['https://example.com/demo.json', 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi', 'ar://abc123', '']) {
      expect((await create(launchBody({ uri }))).status, uri).toBe(202);
    }
  });
});

describe('every on-chain limit is checked before anything is sent', () => {
  // Each limit at its bound is accepted (202, or 422 chain_capability_missing when the section needs
  // a program this embedded chain lacks: past validation either way) and one past it is refused.
  const accepted = async (body: unknown) => {
    const res = await create(body);
    expect([202, 422], JSON.stringify(res.body)).toContain(res.status);
    if (res.status === 422) expect(res.body.error.code).toBe('chain_capability_missing');
  };
  const full = (overrides: Json = {}) =>
    launchBody({
      tokenStandard: 'spl-token',
      totalSupply: '1000000',
      decimals: 6,
      allocations: { creator: 40, vesting: 20, treasury: 20, pool: 20 },
      vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 86400, periods: 12 },
      dao: { name: 'Demo DAO', votingPeriodSeconds: 3600, quorumPercent: 10 },
      pool: { quoteMint: WSOL, quoteAmount: '1' },
      ...overrides,
    });

  it('name: 32 bytes of UTF-8 (Metaplex), counted in bytes, not characters', async () => {
    await accepted(launchBody({ name: 'n'.repeat(32) }));
    await accepted(launchBody({ name: 'é'.repeat(16) }));
    await expectRefused(launchBody({ name: 'n'.repeat(33) }), 'name');
    await expectRefused(launchBody({ name: 'é'.repeat(16) + 'n' }), 'name');
  });

  it('ticker: 10 characters (Metaplex symbol)', async () => {
    await accepted(launchBody({ ticker: 'ABCDEFGHIJ' }));
    await expectRefused(launchBody({ ticker: 'ABCDEFGHIJK' }), 'ticker');
  });

  it('uri: 200 bytes of UTF-8 (Metaplex)', async () => {
    const base = 'https://example.com/';
    await accepted(launchBody({ uri: base + 'a'.repeat(200 - base.length) }));
    await expectRefused(launchBody({ uri: base + 'a'.repeat(201 - base.length) }), 'uri');
  });

  it('totalSupply × 10^decimals: a u64', async () => {
    await accepted(launchBody({ totalSupply: '18446744073', decimals: 9 }));
    await expectRefused(launchBody({ totalSupply: '18446744074', decimals: 9 }), 'totalSupply');
  });

  it('every non-zero allocation: at least one base unit', async () => {
    await accepted(full({ totalSupply: '100', decimals: 0, allocations: { creator: 97, vesting: 1, treasury: 1, pool: 1 }, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods: 1 }, pool: { quoteMint: WSOL, quoteAmount: '1' } }));
    expect(await expectRefused(full({ totalSupply: '99', decimals: 0, allocations: { creator: 97, vesting: 1, treasury: 1, pool: 1 }, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods: 1 } }), 'allocations.vesting')).toMatch(/rounds to 0/);
  });

  it('vesting periods: no more than the vested base units', async () => {
    // 20 % of 1000 whole tokens at 0 decimals = 200 base units.
    await accepted(full({ totalSupply: '1000', decimals: 0, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods: 200 } }));
    await expectRefused(full({ totalSupply: '1000', decimals: 0, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods: 201 } }), 'vesting.periods');
  });

  it('vesting.cliffUnlockPercent: a whole percent that leaves every period something, the same in the quote and in MCP\'s tool schema', async () => {
    // 20 % of 1000 whole tokens at 0 decimals = 200 base units; 50 % at the cliff leaves 100 for the periods.
    const vesting = (cliffUnlockPercent: unknown, periods = 100) => full({ totalSupply: '1000', decimals: 0, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods, cliffUnlockPercent } });
    await accepted(vesting(50));
    await accepted(vesting(0, 200));
    expect(await expectRefused(vesting(50, 101), 'vesting.cliffUnlockPercent')).toMatch(/leaves 100 of the 200 vested base units for 101 periods/);
    expect(await expectRefused(vesting(100, 1), 'vesting.cliffUnlockPercent')).toMatch(/leaves 0 of the 200/);
    for (const bad of [-1, 101, 12.5, '10']) expect(await expectRefused(vesting(bad), 'vesting.cliffUnlockPercent'), String(bad)).toBeTruthy();
    const curve = launchBody({ allocations: { pool: 90, vesting: 10 }, vesting: { beneficiary: pk(), cliffSeconds: 60, periodSeconds: 60, periods: 2, cliffUnlockPercent: 10 },
      pool: { kind: 'bonding-curve', quoteMint: WSOL, initialMarketCap: '30', graduationMarketCap: '400' } });
    expect(await expectRefused(curve, 'vesting.cliffUnlockPercent')).toMatch(/not built yet for bonding-curve/);
    // The quote takes the same body and refuses the same way, creating nothing.
    const quote = await t.request('/api/launches/quote', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify(vesting(50, 101)) });
    expect(quote.status).toBe(400);
    expect(JSON.stringify(await quote.json())).toContain('vesting.cliffUnlockPercent');
    // OpenAPI publishes it with the launch request.
    const openapi = JSON.stringify(await (await t.request('/api/openapi')).json());
    expect(openapi).toMatch(/"cliffUnlockPercent":\{"type":"integer","minimum":0,"maximum":100/);
    const tools = await t.request('/mcp', { method: 'POST', key, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(await tools.text()).toMatch(/\\?"cliffUnlockPercent\\?":\{\\?"type\\?":\\?"integer\\?",\\?"minimum\\?":0,\\?"maximum\\?":100/);
  });

  it('realm name: 32 bytes of UTF-8 (a PDA seed), counted in bytes', async () => {
    await accepted(full({ dao: { name: 'é'.repeat(16), votingPeriodSeconds: 3600, quorumPercent: 10 } }));
    await expectRefused(full({ dao: { name: 'é'.repeat(17), votingPeriodSeconds: 3600, quorumPercent: 10 } }), 'dao.name');
  });

  it('DAO voting period and quorum: SPL Governance bounds', async () => {
    await expectRefused(full({ dao: { name: 'D', votingPeriodSeconds: 3599, quorumPercent: 10 } }), 'dao.votingPeriodSeconds');
    await expectRefused(full({ dao: { name: 'D', votingPeriodSeconds: 3600, quorumPercent: 0 } }), 'dao.quorumPercent');
  });

  it('pool: sqrt(tokens × lamports) above the 100 LP tokens Raydium CPMM locks', async () => {
    // 20 % of 1000 = 200 base units; 200 × 51 lamports = 10 200, sqrt 100.99 → 100: refused; 200 × 61 → 110: accepted.
    await accepted(full({ totalSupply: '1000', decimals: 0, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods: 1 }, pool: { quoteMint: WSOL, quoteAmount: '0.000000061' } }));
    await expectRefused(full({ totalSupply: '1000', decimals: 0, vesting: { beneficiary: pk(), cliffSeconds: 0, periodSeconds: 1, periods: 1 }, pool: { quoteMint: WSOL, quoteAmount: '0.000000051' } }), 'pool.quoteAmount');
  });
});

describe('messages and encodings', () => {
  it('says which type is expected instead of "is required"', async () => {
    expect(await expectRefused(launchBody({ decimals: '9' }), 'decimals')).toBe('must be a number, not a string');
    expect(await expectRefused(launchBody({ totalSupply: true }), 'totalSupply')).toBe('must be a string or a number, not a boolean');
    expect(await expectRefused(launchBody({ name: ['x'] }), 'name')).toBe('must be a string, not an array');
    expect(await expectRefused(launchBody({ name: undefined }), 'name')).toBe('is required');
  });

  it('refuses a body in another charset with 415 and bytes that are not UTF-8 with 400', async () => {
    const body = JSON.stringify(launchBody());
    for (const type of ['application/json; charset=latin1', 'application/json; charset="iso-8859-1"', 'application/json;charset=utf-16']) {
      const res = await t.request('/api/launches', { method: 'POST', key, headers: { 'content-type': type }, body });
      expect(res.status, type).toBe(415);
      expect(((await res.json()) as Json).error.code).toBe('unsupported_media_type');
    }
    expect((await create(body, { 'content-type': 'application/json; charset=UTF-8' })).status).toBe(202);
    const latin1 = Buffer.concat([Buffer.from('{"name":"Caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const res = await t.request('/api/launches', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: latin1 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Json).error.message).toMatch(/UTF-8/);
  });

  it('refuses deeply nested JSON on every route with 400, also with an Idempotency-Key', async () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    const objects = '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000);
    const before = await count('launches');
    for (const [path, body, headers] of [
      ['/api/launches', deep, { 'idempotency-key': 'deep-1' }],
      ['/api/launches', objects, { 'idempotency-key': 'deep-2' }],
      ['/api/launches', JSON.stringify({ ...launchBody(), extra: JSON.parse('['.repeat(40) + ']'.repeat(40)) }), { 'idempotency-key': 'deep-3' }],
      ['/api/webhooks/test', deep, {}],
      ['/api/dead-letters/dl_x/retry', deep, {}],
    ] as Array<[string, string, Record<string, string>]>) {
      const res = await t.request(path, { method: 'POST', key: path.includes('dead') ? admin : key, headers: { 'content-type': 'application/json', ...headers }, body });
      const json = (await res.json()) as Json;
      expect(res.status, path).toBe(400);
      expect(json.error.message).toMatch(/nested more than 32 levels/);
    }
    expect(await count('launches')).toBe(before);
    // The canonical form used for the request hash is bounded too, whatever calls it.
    expect(() => canonicalJson(JSON.parse('['.repeat(100) + ']'.repeat(100)))).toThrow(/deeper than 32/);
  });
});

describe('idempotency request hash', () => {
  it('is keyed from SECRET_KEY: the stored hash is not the plain digest a guesser could recompute', async () => {
    const body = launchBody({ webhookSecret: 'whsec_guessable_secret_1' });
    expect((await create(body, { 'idempotency-key': 'hmac-1' })).status).toBe(202);
    const row = await t.service.db.selectFrom('idempotency_keys').select('request_hash').where('key', '=', 'hmac-1').executeTakeFirstOrThrow();
    const oracle = createHash('sha256').update(canonicalJson(body)).digest('hex');
    expect(row.request_hash).not.toContain(oracle);
    expect(row.request_hash).toBe(requestHash(body, requestHashKey(t.config.secretKey)));
    expect(row.request_hash).not.toBe(requestHash(body, requestHashKey(Buffer.alloc(32, 7))));
    // Replay and reuse still work on the keyed hash.
    const replay = await t.request('/api/launches', { method: 'POST', key, headers: { 'content-type': 'application/json', 'idempotency-key': 'hmac-1' }, body: JSON.stringify(body) });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await create({ ...body, webhookSecret: 'whsec_guessable_secret_2' }, { 'idempotency-key': 'hmac-1' })).status).toBe(422);
  });

  it('re-keys plain digests stored by an older version in place, and their keys still replay', async () => {
    const body = launchBody();
    const first = await create(body, { 'idempotency-key': 'legacy-1' });
    const legacy = createHash('sha256').update(canonicalJson(body)).digest('hex');
    await t.service.db.updateTable('idempotency_keys').set({ request_hash: legacy }).where('key', '=', 'legacy-1').execute();
    expect(await upgradeLegacyRequestHashes(t.service.db, requestHashKey(t.config.secretKey))).toBe(1);
    const row = await t.service.db.selectFrom('idempotency_keys').select('request_hash').where('key', '=', 'legacy-1').executeTakeFirstOrThrow();
    expect(row.request_hash).not.toContain(legacy);
    const replay = await t.request('/api/launches', { method: 'POST', key, headers: { 'content-type': 'application/json', 'idempotency-key': 'legacy-1' }, body: JSON.stringify(body) });
    expect(replay.status).toBe(202);
    expect(((await replay.json()) as Json).launch.id).toBe(first.body.launch.id);
    expect(await upgradeLegacyRequestHashes(t.service.db, requestHashKey(t.config.secretKey))).toBe(0);
  });
});
