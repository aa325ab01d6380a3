import { Keypair, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { DAMM_V2_PROGRAM_ID, DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { systemClock } from '../../src/lib/clock.js';
import { decodeVestingEscrow } from '../../src/chain/programs/jupiterLock/escrowAccount.js';
import { escrowTotal } from '../../src/watcher/decoders/jupiterLock.js';
import { checkEnvelope } from '../../src/webhooks/eventSchemas.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';
import { curveBody, outsideTrader, until } from './support/trading.js';

// Needs the DBC and DAMM v2 binaries in CHAIN_PROGRAMS_DIR (public test fixtures, docs/programs.md);
// skipped cleanly without them. Runs on SQLite and on PostgreSQL (TEST_DATABASE_URL).
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];
const SECRET = 'whsec_test_0123456789abcdef';

describe.skipIf(!haveBinaries(...IDS))(`a bonding curve graduates to DAMM v2 by the service${needs(...IDS)}`, () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver(systemClock);
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '', WATCH_POLL_INTERVAL: '200ms', WEBHOOK_POLL_INTERVAL_MS: '100ms' } });
    t.service.start();
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('outside buys through the SDK fill the curve; the service migrates it once within 60 s, paid by the wallet, quoted, in the ledger, with signed progress and graduated events', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const body = curveBody({ webhookUrl: receiver.url, webhookSecret: SECRET });
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as any).quote;
    // The config, the pool with the first buy, and the graduation.
    expect(quote.transactions).toBe(3);
    expect(quote.accounts.map((a: any) => a.role)).toEqual(expect.arrayContaining(['amm_pool', 'amm_position', 'amm_position_nft_mint']));
    const wallet = new PublicKey(((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string);
    const before = await t.service.chain.getBalance(wallet);

    const id = await t.createLaunch(key, body);
    const launch = await until('the launch to complete', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.status === 'complete' || got.status === 'failed' ? got : undefined;
    });
    expect(launch.error).toBeNull();
    expect(launch.graduation).toMatchObject({ state: 'waiting', pool: launch.results.pool.address, thresholdLamports: launch.results.pool.graduationQuoteLamports });
    expect(launch.watches.map((w: any) => w.kind)).toEqual(['curve']);
    const pool = new PublicKey(launch.results.pool.address);
    // The graduation is still to be paid: the launch's reservation stays open and holds at least its quoted cost,
    // so neither a withdrawal nor another launch can take it, and the day's use counts it.
    const graduationQuote = quote.accounts.filter((a: any) => a.role.startsWith('amm_')).reduce((n: number, a: any) => n + Number(a.rentLamports), 0);
    const ledgerOf = () => t.service.db.selectFrom('funding_ledger').selectAll().where('launch_id', '=', id).orderBy('created_at').orderBy('id').execute();
    expect((await ledgerOf()).map((e) => e.kind)).not.toContain('release');
    const waiting = ((await (await t.request('/api/funding', { key })).json()) as any).funding;
    expect(Number(waiting.reservedLamports)).toBeGreaterThanOrEqual(graduationQuote);
    expect(Number(waiting.spentTodayLamports)).toBe(Number(quote.totalLamports));

    // Outside traders fill it with Meteora's SDK: 10 SOL buys, the last one takes what is left.
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 100_000_000_000n);
    const outside = outsideTrader(t.service.chain);
    let lastBuyAt = 0;
    for (let i = 0; i < 12 && (await outside.curve(pool)).migrationProgress === 0; i += 1) {
      await outside.buy(trader, pool, 10_000_000_000n + BigInt(i));
      lastBuyAt = Date.now();
    }
    const full = await outside.curve(pool);
    expect(full.quoteReserve >= BigInt(launch.results.pool.graduationQuoteLamports)).toBe(true);

    const graduated = await until('the graduation', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.graduation.state === 'done' ? got.graduation : undefined;
    });
    const tookMs = Date.now() - lastBuyAt;
    if (process.env.GRADUATION_TIMING) console.log({ tookMs });
    expect(tookMs).toBeLessThan(60_000);
    expect((await outside.curve(pool)).isMigrated).toBe(true);
    const amm = await t.service.chain.getAccountInfo(new PublicKey(graduated.ammPool));
    expect(amm?.owner.equals(DAMM_V2_PROGRAM_ID)).toBe(true);
    expect(t.service.graduator.sent).toBe(1);

    // The migration's transaction was paid by the owner's wallet and is in its ledger, with what it really cost.
    const tx = await t.service.chain.history.getTransaction(graduated.signature);
    expect(tx?.accountKeys[0]).toBe(wallet.toBase58());
    const paid = tx!.preBalances[0]! - tx!.postBalances[0]!;
    const entries = await t.service.db.selectFrom('funding_ledger').selectAll().where('launch_id', '=', id).where('kind', '=', 'spend').execute();
    expect(BigInt(entries.find((e) => e.signature === graduated.signature)?.lamports ?? -1)).toBe(paid);
    // The quote is within 10 % of everything the wallet spent: the launch, its first buy and the graduation.
    const spent = before - (await t.service.chain.getBalance(wallet));
    // The reservation is released in the graduation's commit, after its spend: the day's use is what was really spent.
    const ledger = await ledgerOf();
    const release = ledger.filter((e) => e.kind === 'release');
    expect(release).toHaveLength(1);
    expect(Number(release[0]!.created_at)).toBeGreaterThanOrEqual(Math.max(...ledger.filter((e) => e.kind === 'spend').map((e) => Number(e.created_at))));
    const spends = ledger.filter((e) => e.kind === 'spend').reduce((n, e) => n + Number(e.lamports), 0);
    expect(spends).toBe(spent);
    expect(Number(release[0]!.lamports)).toBe(Math.max(0, Number(quote.totalLamports) - spent));
    const settled = ((await (await t.request('/api/funding', { key })).json()) as any).funding;
    expect(Number(settled.spentTodayLamports)).toBe(spent);
    expect(settled.reservedLamports).toBe('0');
    if (process.env.CURVE_COSTS) console.log({ spent, quoted: Number(quote.totalLamports), migration: paid });
    expect(Math.abs(spent - Number(quote.totalLamports)) / spent).toBeLessThan(0.1);

    // Events: three milestones and one graduation, each recorded once and delivered signed to the launch's URL.
    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id).orderBy('sequence').execute();
    const kinds = events.map((e) => e.event);
    expect(kinds.filter((k) => k === 'pool.progress')).toHaveLength(3);
    expect(kinds.filter((k) => k === 'pool.graduated')).toHaveLength(1);
    expect(kinds.indexOf('pool.graduated')).toBeGreaterThan(kinds.lastIndexOf('pool.progress'));
    for (const e of events) expect(checkEnvelope(JSON.parse(e.body)), e.event).toEqual({ ok: true });
    const delivered = await until('the deliveries', 30_000, async () => {
      const got = receiver.requests.map((r) => verifyWebhook<any>(r.body, r.headers, SECRET).payload).filter((p) => p.launchId === id);
      return got.some((p) => p.event === 'pool.graduated') ? got : undefined;
    });
    const progress = delivered.filter((p) => p.event === 'pool.progress');
    expect(progress.map((p) => p.data.percent).sort((a: number, b: number) => a - b)).toEqual([25, 50, 75]);
    for (const p of progress) expect(BigInt(p.data.quoteReserveLamports) * 100n >= BigInt(p.data.thresholdLamports) * BigInt(p.data.percent)).toBe(true);
    const grad = delivered.find((p) => p.event === 'pool.graduated')!;
    expect(grad.data).toMatchObject({ pool: pool.toBase58(), ammPool: graduated.ammPool, signature: graduated.signature, paidBy: wallet.toBase58() });
    expect(grad.data.positions).toHaveLength(1);
    const position = await t.service.chain.getAccountInfo(new PublicKey(grad.data.positions[0].address));
    expect(position?.owner.equals(DAMM_V2_PROGRAM_ID)).toBe(true);
    expect(grad.data.positions[0].owner).toBe(wallet.toBase58());

    // Nothing more happens: the watch ended, and another pass of the job finds nothing due.
    expect(await t.service.graduator.runOnce()).toBe(0);
    const watch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch.watches[0];
    await until('the curve watch to end', 20_000, async () => (((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch.watches[0].state === 'ended' ? true : undefined));
    expect(watch.kind).toBe('curve');
  });
});

describe.skipIf(!haveBinaries(...IDS, DEFAULT_PROGRAM_IDS.vesting))(`a curve with locked vesting graduates with its escrow handed to the beneficiary${needs(...IDS, DEFAULT_PROGRAM_IDS.vesting)}`, () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '', WATCH_POLL_INTERVAL: '200ms' } });
    t.service.start();
  });
  afterAll(async () => t?.close());

  it('create_locker, the escrow to vesting.beneficiary, then the migration: quoted, in the ledger, the escrow watched', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const beneficiary = Keypair.generate().publicKey.toBase58();
    const body = curveBody({ allocations: { pool: 90, vesting: 10 }, vesting: { beneficiary, cliffSeconds: 60, periodSeconds: 60, periods: 2 } });
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as any).quote;
    expect(quote.transactions).toBe(5);
    expect(quote.accounts.map((a: any) => a.role)).toEqual(expect.arrayContaining(['vesting_escrow', 'vesting_escrow_token_account', 'amm_pool']));
    const wallet = new PublicKey(((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string);
    const before = await t.service.chain.getBalance(wallet);
    const id = await t.createLaunch(key, body);
    const launch = await until('the launch to complete', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.status === 'complete' || got.status === 'failed' ? got : undefined;
    });
    expect(launch.error).toBeNull();
    const pool = new PublicKey(launch.results.pool.address);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 100_000_000_000n);
    const outside = outsideTrader(t.service.chain);
    for (let i = 0; i < 12 && (await outside.curve(pool)).migrationProgress === 0; i += 1) await outside.buy(trader, pool, 10_000_000_000n + BigInt(i));
    expect((await outside.curve(pool)).migrationProgress).toBe(1); // locked vesting: create_locker comes first

    const graduation = await until('the graduation', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.graduation.state === 'done' ? got : undefined;
    });
    const event = await t.service.db.selectFrom('outbox_events').select('body').where('launch_id', '=', id).where('event', '=', 'pool.graduated').executeTakeFirstOrThrow();
    const data = JSON.parse(event.body).data;
    expect(data.vesting).toMatchObject({ recipient: beneficiary, amount: (100_000_000n * 10n ** 9n).toString() });
    const escrow = decodeVestingEscrow((await t.service.chain.getAccountInfo(new PublicKey(data.vesting.escrow)))!.data);
    expect(escrow.recipient.toBase58()).toBe(beneficiary);
    expect(escrowTotal(escrow)).toBe(100_000_000n * 10n ** 9n);
    expect(graduation.watches.map((w: any) => w.kind).sort()).toEqual(['curve', 'vesting']);
    expect(graduation.watches.find((w: any) => w.kind === 'vesting').address).toBe(data.vesting.escrow);
    // Three graduation transactions, each a spend of the wallet's; the quote within 10 % of everything spent.
    const spends = await t.service.db.selectFrom('funding_ledger').select('signature').where('launch_id', '=', id).where('kind', '=', 'spend').execute();
    expect(spends.length).toBe(5);
    const spent = before - (await t.service.chain.getBalance(wallet));
    if (process.env.CURVE_COSTS) console.log({ spent, quoted: Number(quote.totalLamports) });
    expect(Math.abs(spent - Number(quote.totalLamports)) / spent).toBeLessThan(0.1);
  });
});

describe.skipIf(!haveBinaries(...IDS))(`a curve someone else migrated first${needs(...IDS)}`, () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '' } });
  });
  afterAll(async () => t?.close());

  it('is reported once as graduated with paidBy null and its migration signature, and the wallet pays nothing', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const id = await t.createLaunch(key, curveBody());
    await t.service.runner.drain();
    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    const pool = new PublicKey(launch.results.pool.address);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 100_000_000_000n);
    const outside = outsideTrader(t.service.chain);
    for (let i = 0; i < 12 && (await outside.curve(pool)).migrationProgress === 0; i += 1) await outside.buy(trader, pool, 10_000_000_000n + BigInt(i));
    // The permissionless migration, by an outsider through the SDK, before the service's watcher looks.
    const dammConfig = new PublicKey('Hv8Lmzmnju6m7kcokVKvwqz7QPmdX9XfKjJsXz8RXcjp'); // the 100 bps tier
    const { transaction, firstPositionNftKeypair, secondPositionNftKeypair } = await outside.client.migration.migrateToDammV2({ payer: trader.publicKey, pool, dammConfig });
    const signature = await outside.send(transaction, [trader, firstPositionNftKeypair, secondPositionNftKeypair]);
    const spendsBefore = await t.service.db.selectFrom('funding_ledger').select('id').where('launch_id', '=', id).execute();

    await t.service.watcher.runOnce();
    expect(await t.service.graduator.runOnce()).toBe(1);
    expect(t.service.graduator.sent).toBe(0);
    const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    expect(got.graduation).toMatchObject({ state: 'done', signature, positions: [] });
    expect(got.watches[0]).toMatchObject({ kind: 'curve', state: 'ended', endedReason: 'graduated' });
    const events = await t.service.db.selectFrom('outbox_events').select('body').where('launch_id', '=', id).where('event', '=', 'pool.graduated').execute();
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.body).data).toMatchObject({ pool: pool.toBase58(), ammPool: got.graduation.ammPool, signature, paidBy: null, positions: [] });
    // No spend: the only new entry is the release of the reservation that held the graduation's cost.
    const entriesAfter = await t.service.db.selectFrom('funding_ledger').select(['id', 'kind']).where('launch_id', '=', id).execute();
    expect(entriesAfter.filter((e) => !spendsBefore.some((b) => b.id === e.id)).map((e) => e.kind)).toEqual(['release']);
    expect(await t.service.graduator.runOnce()).toBe(0);
  });
});
