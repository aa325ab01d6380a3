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

beforeAll(async () => {
  t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
  served = await serveOnPort(t);
  keys = { writer: await t.key('acme', ['launches:write', 'launches:read']), admin: await t.key('ops', ['admin']) };
  const res = await t.request('/api/launches', { method: 'POST', key: keys.writer, json: launchBody() });
  launchId = ((await res.json()) as { launch: { id: string } }).launch.id;
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

describe('bad-input probe', () => {
  it('answers every malformed request to every route (methods, ids, auth, bodies, content types, queries) without a 5xx, in the error envelope', async () => {
    const cases = probeCases(launchId);
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

  it('answers unicode, nulls and arrays in the webhook test route and the list filters without a 5xx', async () => {
    const bodies = [{ webhookUrl: null, event: null }, { webhookUrl: ['http://127.0.0.1:9/'], event: ['launch.queued'] }, { webhookUrl: 'http://💥.invalid/', event: 'launch.💥' }, { webhookUrl: 'javascript:alert(1)', event: 'launch.queued' }, { webhookUrl: 'http://127.0.0.1:9/', event: 'launch.queued', webhookSecret: { a: 1 } }];
    const cases: ProbeCase[] = bodies.map((b, i) => ({ label: `webhook test body ${i}`, method: 'POST', path: '/api/webhooks/test', auth: 'writer', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) }));
    const { problems, statuses } = await probeAll(cases);
    expect(problems).toEqual([]);
    expect(statuses.every((s) => s >= 400 && s < 500)).toBe(true);
  });
});
