import { PublicKey } from '@solana/web3.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { closeReservation, insertEntry } from '../../src/funding/ledger.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { haveBinaries, programsDir } from '../programs/support/binaries.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const CPMM = 'CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C';
/** Past 2^53 and odd: a JS number rounds each of these to a neighbour. */
const HUGE_DEPOSIT = 2n ** 53n + 2n ** 20n + 1n;
const HUGE_RESERVATION = 2n ** 53n + 3n;

interface FundingView {
  address: string;
  balanceLamports: string;
  reservedLamports: string;
  availableLamports: string;
  spentTodayLamports: string;
}

async function funding(key: string): Promise<FundingView> {
  const res = await t!.request('/api/funding', { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { funding: FundingView }).funding;
}

async function quote(key: string, body: Record<string, unknown>): Promise<Record<string, string | boolean>> {
  const res = await t!.request('/api/launches/quote', { method: 'POST', key, json: body });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { quote: Record<string, string | boolean> }).quote;
}

const exactBalance = (address: string) => t!.service.chain.getLamports(new PublicKey(address));

describe('lamports past 2^53, exact end to end in funding', () => {
  it('shows the balance, what is reserved, available and spent today exactly; the quote and the limits compare exactly; a release is exact', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const admin = await t.key('ops', ['admin']);
    const { address } = await funding(key);
    // The embedded chain's faucet pays more than 2^53 lamports into the wallet (a real transfer).
    await (t.service.chain as EmbeddedBackend).airdrop(new PublicKey(address), HUGE_DEPOSIT);
    const balance = await exactBalance(address);
    expect(balance > 2n ** 53n).toBe(true);

    // An open reservation past 2^53 (a launch that reserved it and has not spent or released).
    const launchId = 'lch_huge_reservation';
    await insertEntry(t.service.db, { owner: 'acme', launchId, kind: 'reserve', lamports: HUGE_RESERVATION, now: Date.now() });

    const shown = await funding(key);
    expect(shown.balanceLamports).toBe(String(balance)); // old: the rounded number
    expect(shown.reservedLamports).toBe(String(HUGE_RESERVATION)); // old: 9007199254740996
    expect(shown.availableLamports).toBe(String(balance - HUGE_RESERVATION));
    expect(shown.spentTodayLamports).toBe(String(HUGE_RESERVATION)); // old: 9007199254740996

    const q = await quote(key, launchBody());
    expect(q.availableLamports).toBe(String(balance - HUGE_RESERVATION));
    expect(q.sufficient).toBe(true);
    const total = BigInt(q.totalLamports as string);

    // The daily limit is today's use plus this quote exactly: allowed. One lamport less: refused.
    const setDay = (max: bigint) => t!.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLamportsPerDay: String(max) } });
    expect((await setDay(HUGE_RESERVATION + total - 1n)).status).toBe(200);
    const refused = await t.request('/api/launches', { method: 'POST', key, json: launchBody() });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { details: { limit: string; max: string } } }).error.details).toMatchObject({ limit: 'maxLamportsPerDay', max: String(HUGE_RESERVATION + total - 1n) });
    expect((await setDay(HUGE_RESERVATION + total)).status).toBe(200);
    const created = await t.request('/api/launches', { method: 'POST', key, json: launchBody() });
    expect(created.status, await created.clone().text()).toBe(202); // old: 403, today's use read as …996

    // Closing the big reservation releases exactly what it held.
    expect(await closeReservation(t.service.db, { launchId, now: Date.now() })).toBe(HUGE_RESERVATION);
    const ledger = ((await (await t.request('/api/funding/ledger', { key })).json()) as { entries: Array<{ launchId: string; kind: string; lamports: string }> }).entries;
    expect(ledger.filter((e) => e.launchId === launchId).map((e) => [e.kind, e.lamports])).toEqual([
      ['release', String(HUGE_RESERVATION)], // old: 9007199254740996
      ['reserve', String(HUGE_RESERVATION)],
    ]);
  });

  it.skipIf(!haveBinaries(CPMM))(`quotes a pool's SOL past 2^53 exactly${programsDir ? '' : ' [skipped: needs CHAIN_PROGRAMS_DIR with the CPMM binary]'}`, async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir! } });
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const pooled = launchBody({ tokenStandard: 'spl-token', allocations: { creator: 50, pool: 50 }, pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '9007199.254740993' } });
    const q = await quote(key, pooled);
    expect(q.poolQuoteLamports).toBe('9007199254740993'); // old: 9007199254740992
    // Everything else in the quote is the same as for a pool of 1 SOL: the total differs by exactly the SOL.
    const small = await quote(key, { ...pooled, pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '1' } });
    expect(BigInt(q.totalLamports as string) - BigInt(small.totalLamports as string)).toBe(9007199254740993n - 1_000_000_000n); // old: off by one
    expect(q.sufficient).toBe(false);
  });
});
