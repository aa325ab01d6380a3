import { Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { LAUNCH_FIELDS, probeCases, WRONG_VALUES, type ProbeCase } from './support/probeCases.js';
import { serveOnPort, type ServedService } from './support/server.js';

let t: TestService;
let served: ServedService;
let keys: { writer: string; admin: string };
let launchId: string;
let endpointId: string;

beforeAll(async () => {
  t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
  served = await serveOnPort(t);
  keys = { writer: await t.key('acme', ['launches:write', 'launches:read']), admin: await t.key('ops', ['admin']) };
  launchId = await t.createLaunch(keys.writer);
  const created = await t.request('/api/webhook-endpoints', { method: 'POST', key: keys.writer, json: { url: 'http://127.0.0.1:9/hook' } });
  endpointId = ((await created.json()) as { endpoint: { id: string } }).endpoint.id;
});
afterAll(async () => {
  await served?.close();
  await t?.close();
});

/** Sends one case; returns what is wrong with the answer (nothing when it is a proper refusal or success). */
async function probe(c: ProbeCase): Promise<{ problem?: string; status: number }> {
  const headers: Record<string, string> = { ...c.headers };
  if (c.auth !== 'none') headers.authorization = `Bearer ${keys[c.auth]}`;
  let res;
  try {
    res = await served.send(c.method, c.path, { headers, body: c.body });
  } catch (error) {
    return { problem: `request failed: ${(error as Error).message}`, status: 0 };
  }
  if (res.status >= 500) return { problem: `${res.status} ${res.text.slice(0, 200)}`, status: res.status };
  if (!res.headers['x-request-id']) return { problem: 'no X-Request-ID', status: res.status };
  if (res.status < 400 || c.method === 'HEAD') return { status: res.status };
  try {
    const body = JSON.parse(res.text) as { error?: { code?: unknown; message?: unknown } };
    const { code, message } = body.error ?? {};
    if (typeof code !== 'string' || !/^[a-z][a-z_]*$/.test(code)) return { problem: `bad error.code in ${res.text.slice(0, 200)}`, status: res.status };
    if (typeof message !== 'string' || message === '') return { problem: 'empty error.message', status: res.status };
  } catch {
    return { problem: `not JSON: ${res.text.slice(0, 200)}`, status: res.status };
  }
  return { status: res.status };
}

async function probeAll(cases: ProbeCase[]): Promise<{ problems: string[]; statuses: number[] }> {
  const problems: string[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < cases.length; i += 8) {
    const batch = cases.slice(i, i + 8);
    const got = await Promise.all(batch.map(probe));
    got.forEach((g, j) => {
      statuses.push(g.status);
      if (g.problem) problems.push(`${batch[j]!.label}: ${g.problem}`);
    });
  }
  return { problems, statuses };
}

const countLaunches = async () => Number((await t.service.db.selectFrom('launches').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

/** A request with every optional section, so nested fields are validated too. */
function fullBody(): Record<string, any> {
  const pk = () => Keypair.generate().publicKey.toBase58();
  return launchBody({
    tokenStandard: 'spl-token',
    allocations: { creator: 20, vesting: 15, treasury: 35, pool: 30 },
    vesting: { beneficiary: pk(), cliffSeconds: 2592000, periodSeconds: 86400, periods: 365 },
    dao: { name: 'Demo DAO', votingPeriodSeconds: 259200, quorumPercent: 10 },
    pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '5' },
    revokeMintAuthority: true,
  });
}

function withField(body: Record<string, any>, path: string, value: unknown): Record<string, any> {
  const copy = structuredClone(body);
  const parts = path.split('.');
  let target = copy;
  for (const part of parts.slice(0, -1)) target = target[part];
  target[parts.at(-1)!] = value;
  return copy;
}

// Hundreds of requests each, a few seconds on a quiet machine; the launches some of them create run
// beside the probe, so a loaded machine can stretch a test far beyond the default 60 s.
describe('bad-input probe', { timeout: 180_000 }, () => {
  it('answers every malformed request to every route (methods, ids, auth, bodies, content types, queries) without a 5xx, in the error envelope', async () => {
    const cases = probeCases(launchId, endpointId);
    expect(cases.length).toBeGreaterThan(400);
    const before = await countLaunches();
    const { problems, statuses } = await probeAll(cases);
    expect(problems).toEqual([]);
    // None of these may create a launch, and the probe really reached refusals of many kinds.
    expect(await countLaunches()).toBe(before);
    for (const status of [400, 401, 404, 413, 415]) expect(statuses).toContain(status);
  });

  it('refuses a wrong value of every type in every launch field with a 4xx envelope and creates a launch only for what it accepted', async () => {
    const cases: ProbeCase[] = [];
    for (const field of LAUNCH_FIELDS) {
      for (const value of WRONG_VALUES) {
        cases.push({ label: `${field}=${JSON.stringify(value)?.slice(0, 30)}`, method: 'POST', path: '/api/launches', auth: 'writer', headers: { 'content-type': 'application/json' }, body: JSON.stringify(withField(fullBody(), field, value)) });
      }
      cases.push({ label: `${field} missing`, method: 'POST', path: '/api/launches', auth: 'writer', headers: { 'content-type': 'application/json' }, body: JSON.stringify(withField(fullBody(), field, undefined)) });
    }
    const before = await countLaunches();
    const { problems, statuses } = await probeAll(cases);
    expect(problems).toEqual([]);
    expect(statuses.filter((s) => s === 400).length).toBeGreaterThan(cases.length / 2);
    expect(await countLaunches()).toBe(before + statuses.filter((s) => s === 202).length);
  });

  it('refuses a wrong value in every webhook endpoint and launch-destination field without creating or changing anything', async () => {
    const endpointsRow = () => t.service.db.selectFrom('webhook_endpoints').selectAll().orderBy('id').execute();
    const launchRow = () => t.service.db.selectFrom('launches').select(['webhook_url', 'webhook_secret_enc']).where('id', '=', launchId).executeTakeFirstOrThrow();
    const cases: ProbeCase[] = [];
    const send = (method: string, path: string, body: unknown, label: string) =>
      cases.push({ label, method, path, auth: 'writer', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const valid = { url: 'http://127.0.0.1:9/hook', events: ['launch.*'], description: 'd', signatureScheme: 'standard' };
    for (const value of [...WRONG_VALUES, ['launch.nope'], ['*', 5], ['launch.**'], Array.from({ length: 60 }, () => 'launch.queued'), 'ftp://x', 'http://u:p@h/']) {
      const v = JSON.stringify(value)?.slice(0, 30);
      for (const field of ['url', 'events', 'description', 'signatureScheme']) {
        // description accepts any string up to 500 characters and null; those are not wrong values.
        if (field === 'description' && (value === null || (typeof value === 'string' && value.length <= 500))) continue;
        send('POST', '/api/webhook-endpoints', { ...valid, [field]: value }, `create ${field}=${v}`);
        if (field !== 'signatureScheme') send('PATCH', `/api/webhook-endpoints/${endpointId}`, { events: ['launch.complete'], [field]: value }, `patch ${field}=${v}`);
      }
      if (typeof value !== 'boolean') send('PATCH', `/api/webhook-endpoints/${endpointId}`, { url: 'http://127.0.0.1:9/other', disabled: value }, `patch disabled=${v}`);
      if (value !== 0) send('POST', `/api/webhook-endpoints/${endpointId}/rotate-secret`, { expiresInSeconds: value }, `rotate expiresInSeconds=${v}`);
      send('POST', `/api/webhook-endpoints/${endpointId}/recover`, { since: value }, `recover since=${v}`);
      if (value !== null) send('POST', `/api/webhook-endpoints/${endpointId}/recover`, { since: '2026-01-01T00:00:00Z', until: value }, `recover until=${v}`);
      send('PATCH', `/api/launches/${launchId}`, { webhookSecret: 'a-valid-secret-of-enough-length', webhookUrl: value }, `launch webhookUrl=${v}`);
      if (typeof value !== 'string' || value.length < 16 || value.length > 256) send('PATCH', `/api/launches/${launchId}`, { webhookUrl: 'http://127.0.0.1:9/new', webhookSecret: value }, `launch webhookSecret=${v}`);
    }
    send('PATCH', `/api/launches/${launchId}`, { webhookUrl: 'http://127.0.0.1:9/new', status: 'complete' }, 'launch unknown field');
    send('PATCH', `/api/launches/${launchId}`, {}, 'launch empty patch');
    send('PATCH', `/api/webhook-endpoints/${endpointId}`, {}, 'endpoint empty patch');
    send('POST', `/api/webhook-endpoints/${endpointId}/recover`, { since: '2999-01-01T00:00:00Z' }, 'recover from the future');
    const [endpointsBefore, launchBefore] = [await endpointsRow(), await launchRow()];
    const { problems, statuses } = await probeAll(cases);
    expect(problems).toEqual([]);
    expect(cases.filter((_, i) => statuses[i] !== 400).map((c) => `${c.label}: ${statuses[cases.indexOf(c)]}`)).toEqual([]);
    expect(await endpointsRow()).toEqual(endpointsBefore);
    expect(await launchRow()).toEqual(launchBefore);
  });

  it('answers unicode, nulls and arrays in the webhook test route and the list filters without a 5xx', async () => {
    const bodies = [{ webhookUrl: null, event: null }, { webhookUrl: ['http://127.0.0.1:9/'], event: ['launch.queued'] }, { webhookUrl: 'http://💥.invalid/', event: 'launch.💥' }, { webhookUrl: 'javascript:alert(1)', event: 'launch.queued' }, { webhookUrl: 'http://127.0.0.1:9/', event: 'launch.queued', webhookSecret: { a: 1 } }];
    const cases: ProbeCase[] = bodies.map((b, i) => ({ label: `webhook test body ${i}`, method: 'POST', path: '/api/webhooks/test', auth: 'writer', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) }));
    const { problems, statuses } = await probeAll(cases);
    expect(problems).toEqual([]);
    expect(statuses.every((s) => s >= 400 && s < 500)).toBe(true);
  });

  it('refuses text the chain or a wallet would mangle, nested and mis-encoded bodies, and wrong types, without a 5xx or a launch', async () => {
    const json = (body: unknown, extra: Record<string, string> = {}): Pick<ProbeCase, 'headers' | 'body'> => ({ headers: { 'content-type': 'application/json', ...extra }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const launch = (label: string, init: Pick<ProbeCase, 'headers' | 'body'>): ProbeCase => ({ label, method: 'POST', path: '/api/launches', auth: 'writer', ...init });
    const cases: ProbeCase[] = [
      ...['Lone \ud800', '\udfffX', 'Ctl\u0000', 'Bell\u0007', 'C1\u0085', 'RLO\u202e', 'LRI\u2066', 'RLM\u200f', 'ALM\u061c', 'LS\u2028'].map((name) => launch(`name ${JSON.stringify(name)}`, json(withField(fullBody(), 'name', name)))),
      ...['gnp\u202eDAO', 'DAO\ud83d', 'é'.repeat(17)].map((name) => launch(`dao.name ${JSON.stringify(name)}`, json(withField(fullBody(), 'dao.name', name)))),
      ...['javascript:alert(1)', 'data:text/html,x', 'http://example.com/x.json', 'file:///etc/passwd', 'https://', 'ipfs\u202e://x', ' https://example.com/a'].map((uri) => launch(`uri ${JSON.stringify(uri)}`, json(withField(fullBody(), 'uri', uri)))),
      ...['9', 9.5, -1, null, [9], { v: 9 }].map((decimals) => launch(`decimals ${JSON.stringify(decimals)}`, json(withField(fullBody(), 'decimals', decimals)))),
      launch('allocation rounding to zero', json({ ...fullBody(), totalSupply: '10', decimals: 0 })),
      launch('pool too small for CPMM', json(withField({ ...fullBody(), totalSupply: '1000', decimals: 0, vesting: { beneficiary: fullBody().vesting.beneficiary, cliffSeconds: 0, periodSeconds: 1, periods: 1 } }, 'pool.quoteAmount', '0.000000001'))),
      launch('20 000 nested arrays with an Idempotency-Key', json('['.repeat(20_000) + ']'.repeat(20_000), { 'idempotency-key': 'deep-probe' })),
      launch('nested objects inside a valid body', json({ ...fullBody(), allocations: JSON.parse('{"a":'.repeat(40) + '1' + '}'.repeat(40)) })),
      launch('charset latin1', json(fullBody(), { 'content-type': 'application/json; charset=latin1' })),
      launch('charset utf-16', json(fullBody(), { 'content-type': 'application/json; charset=utf-16le' })),
      launch('invalid UTF-8 bytes', { headers: { 'content-type': 'application/json' }, body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }),
      { label: 'webhook test deep body', method: 'POST', path: '/api/webhooks/test', auth: 'writer', ...json('{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000)) },
      { label: 'dead-letter retry deep body', method: 'POST', path: '/api/dead-letters/dl_none/retry', auth: 'admin', ...json('['.repeat(5_000) + ']'.repeat(5_000)) },
      { label: 'redeliver latin1 body', method: 'POST', path: '/api/deliveries/dlv_none/redeliver', auth: 'writer', ...json('{}', { 'content-type': 'application/json; charset=latin1' }) },
    ];
    const before = await countLaunches();
    const { problems, statuses } = await probeAll(cases);
    expect(problems).toEqual([]);
    statuses.forEach((status, i) => expect(status, cases[i]!.label).toBeGreaterThanOrEqual(400));
    statuses.forEach((status, i) => expect(status, cases[i]!.label).toBeLessThan(500));
    expect(statuses).toContain(415);
    expect(await countLaunches()).toBe(before);
  });
});
