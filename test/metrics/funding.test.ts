import { PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { parsePrometheusText, sumSamples, type Sample } from '../../src/metrics/parseText.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;

describe('funding totals on /metrics', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { FUNDING_DEV_AIRDROP: '0' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const scrape = async (): Promise<Sample[]> => {
    const res = await t.service.app.request('/metrics');
    expect(res.status).toBe(200);
    return parsePrometheusText(await res.text());
  };
  const reserved = (s: Sample[]) => sumSamples(s, 'launch_service_funding_reserved_lamports');
  const spent = (s: Sample[]) => sumSamples(s, 'launch_service_funding_spent_lamports_total');
  const refused = (s: Sample[], reason: string) => sumSamples(s, 'launch_service_funding_refused_total', (l) => l.reason === reason);
  const account = async (key: string) => ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string; balanceLamports: string } }).funding;

  it('exports what is reserved, what was spent and what was refused, as totals without an owner label', async () => {
    const acme = await t.key('acme', [...WRITE]);
    const other = await t.key('other', [...WRITE]);
    const admin = await t.key('ops', ['admin']);
    const { address } = await account(acme);
    await account(other);
    await t.service.chain.requestAirdrop!(new PublicKey(address), BigInt(10 * SOL));

    const start = await scrape();
    expect(reserved(start)).toBe(0);
    expect(spent(start)).toBe(0);
    expect(refused(start, 'insufficient_funds')).toBe(0);
    expect(refused(start, 'funding_limit_exceeded')).toBe(0);

    const quote = (await (await t.request('/api/launches/quote', { method: 'POST', key: acme, json: launchBody() })).json()) as { quote: { totalLamports: string } };
    const total = Number(quote.quote.totalLamports);
    await t.createLaunch(acme);
    await t.createLaunch(acme);
    // `other` has nothing: refused for its funds, then (a limit of 0 launches a day) for its limit.
    expect((await t.request('/api/launches', { method: 'POST', key: other, json: launchBody() })).status).toBe(402);
    expect((await t.request('/api/funding/other/limits', { method: 'PUT', key: admin, json: { maxLaunchesPerDay: 0 } })).status).toBe(200);
    expect((await t.request('/api/launches', { method: 'POST', key: other, json: launchBody() })).status).toBe(403);
    // A quote that does not suffice is not a refusal.
    expect((await t.request('/api/launches/quote', { method: 'POST', key: other, json: launchBody() })).status).toBe(200);

    const queued = await scrape();
    expect(reserved(queued)).toBe(2 * total);
    expect(spent(queued)).toBe(0);
    expect(refused(queued, 'insufficient_funds')).toBe(1);
    expect(refused(queued, 'funding_limit_exceeded')).toBe(1);
    const text = await (await t.service.app.request('/metrics')).text();
    expect(text).not.toMatch(/launch_service_funding_[a-z_]+\{[^}]*owner/);
    expect(text).not.toContain(address);

    expect(await t.service.runner.drain()).toBe(2);
    const done = await scrape();
    expect(reserved(done)).toBe(0);
    // What the ledger says was spent is what left the wallet on chain.
    const balance = Number((await account(acme)).balanceLamports);
    expect(spent(done)).toBe(10 * SOL - balance);
    expect(spent(done)).toBeGreaterThan(0);

    // Reserved and spent are read from the ledger, so a new process reports them too; refusals are per process.
    const fresh = createMetrics({ db: t.service.db, breakers: { snapshot: () => ({}) } });
    const after = parsePrometheusText(await fresh.render());
    expect(spent(after)).toBe(spent(done));
    expect(reserved(after)).toBe(0);
    expect(refused(after, 'insufficient_funds')).toBe(0);
  }, 120_000);
});
