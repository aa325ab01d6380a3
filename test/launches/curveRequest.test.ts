import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

// Validation only: no program binary is needed (the curve is computed by the SDK, offline).
const WSOL = 'So11111111111111111111111111111111111111112';

const DAO = { name: 'Curve DAO', votingPeriodSeconds: 3600, quorumPercent: 10 };

function curveBody(pool: Record<string, unknown> = {}, overrides: Record<string, unknown> = {}) {
  return launchBody({
    totalSupply: '1000000000',
    decimals: 9,
    allocations: { pool: 100 },
    pool: { kind: 'bonding-curve', quoteMint: WSOL, initialMarketCap: '30', graduationMarketCap: '400', graduationSupplyPercent: 20, tradingFeeBps: 100, creatorFeePercent: 50, antiSniping: true, firstBuy: { quoteAmount: '0.5' }, ...pool },
    ...overrides,
  });
}

describe('bonding-curve requests: every bad field answers 400 naming it, with nothing created', () => {
  let t: TestService;
  let key: string;
  beforeAll(async () => {
    t = await startTestService();
    key = await t.key('acme', ['launches:write', 'launches:read']);
  });
  afterAll(async () => t?.close());

  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a zero initial market cap', curveBody({ initialMarketCap: '0' }), 'pool.initialMarketCap'],
    ['a negative graduation market cap', curveBody({ graduationMarketCap: '-400' }), 'pool.graduationMarketCap'],
    ['inverted market caps', curveBody({ initialMarketCap: '400', graduationMarketCap: '30' }), 'pool.graduationMarketCap'],
    ['equal market caps', curveBody({ initialMarketCap: '30', graduationMarketCap: '30' }), 'pool.graduationMarketCap'],
    ['a graduation supply of 0 %', curveBody({ graduationSupplyPercent: 0 }), 'pool.graduationSupplyPercent'],
    ['a graduation supply of 101 %', curveBody({ graduationSupplyPercent: 101 }), 'pool.graduationSupplyPercent'],
    ['a creator fee of 150 %', curveBody({ creatorFeePercent: 150 }), 'pool.creatorFeePercent'],
    ['a creator fee of -1 %', curveBody({ creatorFeePercent: -1 }), 'pool.creatorFeePercent'],
    ['a trading fee under the program minimum', curveBody({ tradingFeeBps: 5 }), 'pool.tradingFeeBps'],
    ['an unknown kind', curveBody({ kind: 'amm' }), 'pool.kind'],
    ['a first buy larger than the curve', curveBody({ firstBuy: { quoteAmount: '100' } }), 'pool.firstBuy.quoteAmount'],
    ['fees to the treasury without a dao', curveBody({}, { fees: { recipient: 'treasury' } }), 'fees.recipient'],
    ['a creator allocation', curveBody({}, { allocations: { creator: 50, pool: 50 } }), 'allocations.creator'],
    ['a treasury allocation', curveBody({}, { allocations: { treasury: 10, pool: 90 } }), 'allocations.treasury'],
    ['a treasury allocation with a dao', curveBody({}, { tokenStandard: 'spl-token', allocations: { treasury: 10, pool: 90 }, dao: DAO }), 'allocations.treasury'],
    ['a dao on a token-2022 curve', curveBody({}, { tokenStandard: 'token-2022', dao: DAO }), 'tokenStandard'],
    ['decimals the program does not support', curveBody({}, { decimals: 2, totalSupply: '1000000' }), 'decimals'],
  ];

  it.each(cases)('%s', async (_name, body, field) => {
    for (const path of ['/api/launches', '/api/launches/quote']) {
      const res = await t.request(path, { method: 'POST', key, json: body });
      expect(res.status, path).toBe(400);
      const { error } = (await res.json()) as { error: { code: string; details: { fields: Array<{ field: string; message: string }> } } };
      expect(error.code).toBe('invalid_request');
      expect(error.details.fields.map((f) => f.field)).toContain(field);
      for (const f of error.details.fields) expect(f.message).not.toMatch(/Too big|Too small|Invalid input|<=|>=/);
    }
    const launches = await t.service.db.selectFrom('launches').select('id').execute();
    expect(launches).toEqual([]);
  });

  it('names what the first buy must stay under', async () => {
    const res = await t.request('/api/launches/quote', { method: 'POST', key, json: curveBody({ firstBuy: { quoteAmount: '100' } }) });
    const { error } = (await res.json()) as { error: { details: { fields: Array<{ field: string; message: string }> } } };
    expect(error.details.fields).toEqual([{ field: 'pool.firstBuy.quoteAmount', message: expect.stringMatching(/^is larger than the curve: it graduates at 80 SOL of buys, so the first buy must be less$/) }]);
  });

  it('a dao on an spl-token curve is accepted without a treasury allocation, and fees may then go to the treasury', async () => {
    const res = await t.request('/api/launches/quote', { method: 'POST', key, json: curveBody({}, { tokenStandard: 'spl-token', dao: DAO, fees: { recipient: 'treasury' } }) });
    // 200 with a quote, or 422 when the chain lacks the programs (CI has no binaries); never a validation error.
    expect([200, 422]).toContain(res.status);
    if (res.status === 422) expect(((await res.json()) as { error: { code: string } }).error.code).toBe('chain_capability_missing');
  });

  it('a CPMM pool without kind is still a CPMM pool (the default kind)', async () => {
    const res = await t.request('/api/launches/quote', {
      method: 'POST',
      key,
      json: launchBody({ allocations: { creator: 50, pool: 50 }, pool: { quoteMint: WSOL, quoteAmount: '1' } }),
    });
    // 200 with a quote, or 422 when the chain lacks Raydium CPMM; never a validation error.
    expect([200, 422]).toContain(res.status);
  });
});
