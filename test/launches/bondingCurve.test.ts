import { Keypair, PublicKey, type Connection } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import BN from 'bn.js';
import { DynamicBondingCurveClient } from '@meteora-ag/dynamic-bonding-curve-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainBackend } from '../../src/chain/backend.js';
import { curveKit } from '../../src/chain/programs/dbc/curve.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { checkEnvelope } from '../../src/webhooks/eventSchemas.js';
import { ataBalance, readMintBack } from '../chain/support/readBack.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

// Needs the DBC and DAMM v2 binaries (and Metaplex for spl-token) in CHAIN_PROGRAMS_DIR: the
// public test fixtures, see docs/programs.md. Skipped cleanly without them.
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];
const WSOL = 'So11111111111111111111111111111111111111112';

/** The SDK's client over our chain backend: the outside trader's code path, not ours. */
function sdkClient(chain: ChainBackend): DynamicBondingCurveClient {
  const connection = {
    rpcEndpoint: 'embedded',
    getAccountInfo: (key: PublicKey) => chain.getAccountInfo(key),
    getAccountInfoAndContext: async (key: PublicKey) => ({ context: { slot: 0 }, value: await chain.getAccountInfo(key) }),
  } as unknown as Connection;
  return new DynamicBondingCurveClient(connection, 'confirmed');
}

function curveBody(overrides: Record<string, unknown> = {}, pool: Record<string, unknown> = {}) {
  return launchBody({
    totalSupply: '1000000000',
    decimals: 9,
    allocations: { pool: 100 },
    pool: {
      kind: 'bonding-curve',
      quoteMint: WSOL,
      initialMarketCap: '30',
      graduationMarketCap: '400',
      graduationSupplyPercent: 20,
      tradingFeeBps: 100,
      creatorFeePercent: 50,
      antiSniping: true,
      firstBuy: { quoteAmount: '0.5' },
      ...pool,
    },
    ...overrides,
  });
}

/** What the quote counts for the graduation: its accounts' rent and its three signatures. */
function graduationQuoted(quote: { accounts: Array<{ role: string; rentLamports: string }> }): number {
  return quote.accounts.filter((a) => a.role.startsWith('amm_')).reduce((n, a) => n + Number(a.rentLamports), 0) + 3 * 5000;
}

describe.skipIf(!haveBinaries(...IDS))(`bonding-curve launches on the real DBC program${needs(...IDS)}`, () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '' } });
  });
  afterAll(async () => t?.close());

  it('token-2022: the quote, one step, the curve with its first buy to the creator, and a buy through the SDK', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey.toBase58();
    const body = curveBody({ creator });
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as any).quote;
    // The config, the pool with the first buy, and the graduation the service sends once the curve is full.
    expect(quote.transactions).toBe(3);
    expect(quote.poolQuoteLamports).toBe('500000000');
    expect(quote.accounts.map((a: any) => a.role)).toEqual(expect.arrayContaining(['curve_config', 'curve_pool', 'mint', 'curve_base_vault', 'curve_quote_vault']));
    const wallet = ((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string;
    const before = await t.service.chain.getBalance(new PublicKey(wallet));

    const id = await t.createLaunch(key, body);
    await t.service.runner.drain();
    const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    expect(got.error).toBeNull();
    expect(got.status).toBe('complete');
    expect(got.steps.map((s: any) => s.name)).toEqual(['create_curve']);
    const pool = got.results.pool;
    expect(Object.keys(pool).sort()).toEqual(['address', 'baseVault', 'config', 'graduationQuoteLamports', 'kind', 'programId', 'quoteVault'].sort());
    expect(pool.kind).toBe('bonding-curve');
    // buildCurveWithTwoSegments: the threshold is about the graduation supply share of the graduation market cap (20 % of 400 SOL).
    expect(Number(pool.graduationQuoteLamports) / 1e9).toBeCloseTo(80, 0);

    // What the wallet spent is within 10 % of the quote, first buy included, the graduation not yet
    // (test/graduation/graduation.test.ts compares the whole, graduation included).
    const spent = before - (await t.service.chain.getBalance(new PublicKey(wallet)));
    const launchQuote = Number(quote.totalLamports) - graduationQuoted(quote);
    expect(Math.abs(spent - launchQuote) / spent).toBeLessThan(0.1);
    if (process.env.CURVE_COSTS) console.log({ spent, quoted: Number(quote.totalLamports) });

    // The program minted the whole supply into the curve and revoked the mint authority; the first buy went to the creator.
    const { mint } = await readMintBack(t.service.chain, got.results.mint);
    expect(mint.supply).toBe(1_000_000_000n * 10n ** 9n);
    expect(mint.mintAuthority).toBeNull();
    const bought = await ataBalance(t.service.chain, got.results.mint, creator, TOKEN_2022_PROGRAM_ID);
    expect(bought > 0n).toBe(true);
    const state = (await curveKit()).decodeCurveState((await t.service.chain.getAccountInfo(new PublicKey(pool.address)))!.data);
    expect(state.creator.toBase58()).toBe(wallet);
    // The first buy paid the minimum fee (1 %), not the anti-sniping 99 %: it rode in the pool's creation.
    expect(state.quoteReserve > 494_000_000n && state.quoteReserve < 496_000_000n).toBe(true);
    expect(state.creatorQuoteFee > 0n).toBe(true);

    // An outside trader buys with Meteora's SDK (not our code).
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 3_000_000_000n);
    const client = sdkClient(t.service.chain);
    const tx = await client.pool.swap({ owner: trader.publicKey, pool: new PublicKey(pool.address), amountIn: new BN(1_000_000_000), minimumAmountOut: new BN(0), swapBaseForQuote: false, referralTokenAccount: null });
    const { blockhash, lastValidBlockHeight } = await t.service.chain.getLatestBlockhash();
    tx.recentBlockhash = blockhash;
    tx.feePayer = trader.publicKey;
    tx.sign(trader);
    const signature = await t.service.chain.sendRawTransaction(tx.serialize());
    await t.service.chain.confirmTransaction(signature, lastValidBlockHeight);
    const after = (await curveKit()).decodeCurveState((await t.service.chain.getAccountInfo(new PublicKey(pool.address)))!.data);
    expect(after.quoteReserve > state.quoteReserve).toBe(true);
    expect(await ataBalance(t.service.chain, got.results.mint, trader.publicKey.toBase58(), TOKEN_2022_PROGRAM_ID)).toBeGreaterThan(0n);

    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual(['launch.queued', 'launch.processing', 'launch.step_complete', 'launch.complete']);
    for (const e of events) expect(checkEnvelope(JSON.parse(e.body)), e.event).toEqual({ ok: true });
    expect(JSON.parse(events.at(-1)!.body).data.transactions.map((x: any) => x.type)).toEqual(['curve_config', 'curve_pool']);
  });

  it.skipIf(!haveBinaries(DEFAULT_PROGRAM_IDS.tokenMetadata))(`spl-token: the program writes Metaplex metadata${needs(DEFAULT_PROGRAM_IDS.tokenMetadata)}`, async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey.toBase58();
    const body = curveBody({ creator, tokenStandard: 'spl-token' }, { antiSniping: false, firstBuy: undefined });
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as any).quote;
    const wallet = ((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string;
    const before = await t.service.chain.getBalance(new PublicKey(wallet));
    const id = await t.createLaunch(key, body);
    await t.service.runner.drain();
    // Without a first buy the quote is rent, Metaplex's fee and signatures: still within 10 % of what was spent (the graduation aside).
    const spent = before - (await t.service.chain.getBalance(new PublicKey(wallet)));
    if (process.env.CURVE_COSTS) console.log({ spent, quoted: Number(quote.totalLamports) });
    expect(Math.abs(spent - (Number(quote.totalLamports) - graduationQuoted(quote))) / spent).toBeLessThan(0.1);
    const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    expect(got.error).toBeNull();
    expect(got.status).toBe('complete');
    const { mint } = await readMintBack(t.service.chain, got.results.mint);
    expect(mint.supply).toBe(1_000_000_000n * 10n ** 9n);
    const metadata = PublicKey.findProgramAddressSync([Buffer.from('metadata'), new PublicKey(DEFAULT_PROGRAM_IDS.tokenMetadata).toBuffer(), new PublicKey(got.results.mint).toBuffer()], new PublicKey(DEFAULT_PROGRAM_IDS.tokenMetadata))[0];
    expect((await t.service.chain.getAccountInfo(metadata))?.owner.toBase58()).toBe(DEFAULT_PROGRAM_IDS.tokenMetadata);
    expect(got.results.firstBuy).toBeNull();
    expect(await ataBalance(t.service.chain, got.results.mint, creator, TOKEN_PROGRAM_ID)).toBe(0n);
  });
});
