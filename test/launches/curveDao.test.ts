import { getAssociatedTokenAddressSync, NATIVE_MINT, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { Keypair, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeGovernance, decodeRealm } from '../../src/chain/programs/governance/accounts.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import type { WatchRow } from '../../src/watcher/store.js';
import { checkEnvelope } from '../../src/webhooks/eventSchemas.js';
import { curveBody, outsideTrader } from '../graduation/support/trading.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { startTestService, type TestService } from '../support/service.js';

// Needs the DBC, DAMM v2, Metaplex and SPL Governance binaries in CHAIN_PROGRAMS_DIR (public test
// fixtures, docs/programs.md); skipped cleanly without them. SQLite and PostgreSQL (TEST_DATABASE_URL).
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm, DEFAULT_PROGRAM_IDS.tokenMetadata, DEFAULT_PROGRAM_IDS.governance];
const WSOL = NATIVE_MINT.toBase58();
const GOVERNANCE = new PublicKey(DEFAULT_PROGRAM_IDS.governance);

describe.skipIf(!haveBinaries(...IDS))(`a DAO on a bonding-curve launch${needs(...IDS)}`, () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '' } });
  });
  afterAll(async () => t?.close());

  it('creates the realm on the launched mint after the curve (no treasury allocation: the curve mints the supply); fees to "treasury" are claimed into the realm\'s native treasury', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const body = curveBody(
      { creator: creator.toBase58(), tokenStandard: 'spl-token', dao: { name: `Curve DAO ${Date.now() % 100000}`, votingPeriodSeconds: 3600, quorumPercent: 10 }, fees: { recipient: 'treasury' } },
      { graduationMarketCap: '4000' },
    );
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as any).quote;
    // The config, the pool with the first buy, the DAO, and the graduation the service sends later.
    expect(quote.transactions).toBe(4);
    expect(quote.accounts.map((a: any) => a.role)).toEqual(expect.arrayContaining(['curve_pool', 'realm', 'governance', 'native_treasury', 'treasury_token_account']));
    const wallet = new PublicKey(((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string);
    const before = await t.service.chain.getBalance(wallet);

    const id = await t.createLaunch(key, body);
    await t.service.runner.drain();
    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    expect(launch.error).toBeNull();
    expect(launch.status).toBe('complete');
    expect(launch.steps.map((s: any) => [s.name, s.status])).toEqual([['create_curve', 'complete'], ['create_dao', 'complete']]);
    const mint = new PublicKey(launch.results.mint);
    const dao = launch.results.dao;
    expect(dao.communityMint).toBe(mint.toBase58());
    expect(dao.treasuryAmount).toBe('0');

    // Read from the chain: the realm's community mint is the launched mint, governed by its governance.
    const realm = decodeRealm(GOVERNANCE, (await t.service.chain.getAccountInfo(new PublicKey(dao.realm)))!.data);
    expect(realm.communityMint.toBase58()).toBe(mint.toBase58());
    expect(realm.authority?.toBase58()).toBe(dao.governance);
    const governance = decodeGovernance(GOVERNANCE, (await t.service.chain.getAccountInfo(new PublicKey(dao.governance)))!.data);
    expect(governance.realm.toBase58()).toBe(dao.realm);
    // The treasury exists and holds no tokens (a curve launch allocates none to it): its token account is open at 0.
    expect(await t.service.chain.getBalance(new PublicKey(dao.treasury))).toBeGreaterThan(0);
    const treasuryToken = getAssociatedTokenAddressSync(mint, new PublicKey(dao.treasury), true, TOKEN_PROGRAM_ID);
    expect(treasuryToken.toBase58()).toBe(dao.treasuryTokenAccount);
    expect((await t.service.chain.getAccountInfo(treasuryToken))?.data.readBigUInt64LE(64)).toBe(0n);

    // The wallet spent within 10 % of the quote, the graduation aside (it has not happened).
    const spent = before - (await t.service.chain.getBalance(wallet));
    const graduation = quote.accounts.filter((a: any) => a.role.startsWith('amm_')).reduce((n: number, a: any) => n + Number(a.rentLamports), 0) + 3 * 5000;
    expect(Math.abs(spent - (Number(quote.totalLamports) - graduation)) / spent).toBeLessThan(0.1);

    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual(['launch.queued', 'launch.processing', 'launch.step_complete', 'launch.step_complete', 'dao.created', 'launch.complete']);
    for (const e of events) expect(checkEnvelope(JSON.parse(e.body)), e.event).toEqual({ ok: true });
    const watches = await t.service.db.withTables<{ watches: WatchRow }>().selectFrom('watches').select(['kind', 'address']).where('launch_id', '=', id).execute();
    expect(watches).toEqual(expect.arrayContaining([{ kind: 'dao', address: dao.realm }]));

    // Outside buys through Meteora's SDK make creator fees; the claim pays them to the native treasury.
    const outside = outsideTrader(t.service.chain);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 5_000_000_000n);
    await outside.buy(trader, new PublicKey(launch.results.pool.address), 2_000_000_000n);
    const fees = ((await (await t.request(`/api/launches/${id}/fees`, { key })).json()) as any).fees;
    expect(fees.recipient).toBe(dao.treasury);
    const claimable = BigInt(fees.sources[0].claimable[WSOL]);
    expect(claimable > 0n).toBe(true);
    const treasuryBefore = await t.service.chain.getBalance(new PublicKey(dao.treasury));
    const claimed = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'treasury-claim' } });
    expect(claimed.status).toBe(200);
    expect(((await claimed.json()) as any).claim.amounts).toEqual({ [WSOL]: claimable.toString() });
    expect(BigInt(await t.service.chain.getBalance(new PublicKey(dao.treasury))) - BigInt(treasuryBefore)).toBe(claimable);
  });
});
