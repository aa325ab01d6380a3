import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import type { ServerType } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_PROGRAM_IDS, DAMM_V2_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { startLocalCluster } from '../../src/chain/embedded/localCluster.js';
import type { ChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { startHttpServer } from '../../src/http/server.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { parseLaunchRequest } from '../../src/launches/request.js';
import { signLaunch } from '../../scripts/holder.js';
import { ataBalance } from '../chain/support/readBack.js';
import { curveBody, outsideTrader, until } from '../graduation/support/trading.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';
import { creatorWallet, signAll } from './support/creator.js';

let t: TestService | undefined;
let server: ServerType | undefined;
let cluster: ChainRpcServer | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  if (server) await new Promise((resolve) => server!.close(resolve));
  await cluster?.close();
  await receiver?.close();
  cluster = undefined;
  receiver = undefined;
  await t?.close();
  t = undefined;
  server = undefined;
});

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];
const balance = (address: string | PublicKey) => t!.service.chain.getBalance(new PublicKey(address));
const launchOf = async (key: string, id: string) => ((await (await t!.request(`/api/launches/${id}`, { key })).json()) as { launch: any }).launch;

// A creator-signed bonding curve (docs/signing.md): the creator is the curve's DBC creator, fee
// payer and the source of every lamport of the launch (config, pool, first buy); the test holds the
// creator's key as node:crypto makes it and signs with it alone. Needs the DBC and DAMM v2 binaries
// (public test fixtures) in CHAIN_PROGRAMS_DIR; skipped without them.
describe.skipIf(!haveBinaries(...IDS))(`creator-signed bonding curves on the real DBC program${needs(...IDS)}`, () => {
  it('the creator signs and pays the whole launch to the lamport, the owner’s wallet pays the graduation, and only the creator can claim its fees', async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '' } });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    const start = 3n * BigInt(SOL);
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), start);
    const body = curveBody({ creator: creator.address, signing: 'creator' });

    // The quote names the creator's balance; the graduation is not the creator's to pay, so it is not in it.
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as { quote: any }).quote;
    expect(quote).toMatchObject({ signing: 'creator', payer: creator.address, balanceLamports: String(start), availableLamports: String(start), sufficient: true, poolQuoteLamports: String(SOL / 2) });
    const roles = (quote.accounts as Array<{ role: string }>).map((a) => a.role);
    expect(roles).toEqual(expect.arrayContaining(['curve_config', 'curve_pool', 'mint', 'nonce_account']));
    expect(roles.filter((r) => r.startsWith('amm_'))).toEqual([]);
    // It names the graduation apart: the owner's wallet pays it (checked against what it paid, below).
    expect(quote.graduation).toEqual({ paidBy: 'owner', lamports: expect.stringMatching(/^[1-9]\d*$/) });
    // The config, the pool with its first buy, the setup and the rent return.
    expect(quote.transactions).toBe(4);
    const returned = (quote.accounts as Array<{ rentLamports: string; returned?: true }>).filter((a) => a.returned).reduce((n, a) => n + BigInt(a.rentLamports), 0n);

    const funding = ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding.address;
    const fundingBefore = await balance(funding);
    const payerBefore = await balance(t.service.chain.payer.publicKey);
    const id = await t.createLaunch(key, body);
    expect((await launchOf(key, id)).status).toBe('awaiting_signatures');
    const setup = await signAll(t, key, id, creator);
    expect(setup.status).toBe(200);
    expect(setup.body.signing!.transactions.map((tx) => [tx.step, tx.signed])).toEqual([
      ['setup', true],
      ['create_curve', false],
      ['create_curve', false],
      ['close_nonces', false],
    ]);
    expect((await signAll(t, key, id, creator)).body.signing!.status).toBe('signed');
    expect(await t.service.runner.drain()).toBe(1);

    const launch = await launchOf(key, id);
    expect(launch.error).toBeNull();
    expect(launch.status).toBe('complete');
    const pool = new PublicKey(launch.results.pool.address);
    const outside = outsideTrader(t.service.chain);
    const curve = await outside.curve(pool);
    // The creator is the curve's DBC creator; the first buy's tokens are the creator's.
    expect(curve.creator.toBase58()).toBe(creator.address);
    const firstBuyTokens = await ataBalance(t.service.chain, launch.results.mint, creator.address, TOKEN_2022_PROGRAM_ID);
    expect(firstBuyTokens).toBeGreaterThan(0n);
    expect(curve.quoteReserve).toBeGreaterThan(0n);

    // Every lamport came from the creator: the owner's wallet and the service's payer are unchanged,
    // the creator paid exactly the quote less the nonce rent it got back (no priority fee here).
    expect(await balance(funding)).toBe(fundingBefore);
    expect(await balance(t.service.chain.payer.publicKey)).toBe(payerBefore);
    expect(start - BigInt(await balance(creator.address))).toBe(BigInt(quote.totalLamports) - returned);
    expect(await t.service.db.selectFrom('funding_ledger').selectAll().where('launch_id', '=', id).execute()).toEqual([]);

    // Outside traders fill the curve (Meteora's SDK); the service graduates it, paid by the owner's wallet.
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 100n * BigInt(SOL));
    for (let i = 0; i < 12 && (await outside.curve(pool)).migrationProgress === 0; i += 1) await outside.buy(trader, pool, 10_000_000_000n + BigInt(i));
    const creatorBefore = await balance(creator.address);
    await t.service.watcher.runOnce();
    expect(await t.service.graduator.runOnce()).toBe(1);
    const graduation = (await launchOf(key, id)).graduation;
    expect(graduation.state).toBe('done');
    expect((await t.service.chain.getAccountInfo(new PublicKey(graduation.ammPool)))?.owner.equals(DAMM_V2_PROGRAM_ID)).toBe(true);
    const migration = await t.service.chain.history.getTransaction(graduation.signature);
    expect(migration?.accountKeys[0]).toBe(funding);
    const paid = Number(migration!.preBalances[0]! - migration!.postBalances[0]!);
    expect(await balance(funding)).toBe(fundingBefore - paid);
    // The quote's graduation holds what it took (the quote counts the priority fee's cap; the embedded chain charges none).
    expect(BigInt(paid) <= BigInt(quote.graduation.lamports)).toBe(true);
    const spends = await t.service.db.selectFrom('funding_ledger').selectAll().where('launch_id', '=', id).execute();
    expect(spends.map((e) => [e.kind, e.signature, Number(e.lamports)])).toEqual([['spend', graduation.signature, paid]]);
    expect(await balance(creator.address)).toBe(creatorBefore);
    // The creator's locked position: its NFT is in the creator's hands, not the wallet's.
    const [position] = graduation.positions as Array<{ nftAccount: string; owner: string }>;
    expect(position!.owner).toBe(creator.address);
    const nftAccount = await t.service.chain.getAccountInfo(new PublicKey(position!.nftAccount));
    expect(new PublicKey(nftAccount!.data.subarray(32, 64)).toBase58()).toBe(creator.address);

    // Fees: readable, but only the creator's signature claims them; nothing moves.
    const fees = ((await (await t.request(`/api/launches/${id}/fees`, { key })).json()) as { fees: { recipient: string; sources: Array<{ kind: string; claimable: Record<string, string> }> } }).fees;
    expect(fees.recipient).toBe(creator.address);
    expect(fees.sources.find((s) => s.kind === 'curve')?.claimable['So11111111111111111111111111111111111111112']).toMatch(/^[1-9]\d*$/);
    const claim = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'idempotency-key': 'claim-1' } });
    expect(claim.status).toBe(409);
    expect(((await claim.json()) as { error: { code: string } }).error.code).toBe('creator_claims_fees');
    expect(await balance(creator.address)).toBe(creatorBefore);
    expect(await balance(funding)).toBe(fundingBefore - paid);
  });

  it('npm run holder -- sign signs a creator-signed curve with the creator’s keypair, and it completes', async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '' } });
    const key = await t.key('acme', [...WRITE]);
    const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
    server = listening.server;
    const creator = Keypair.generate();
    await t.service.chain.requestAirdrop!(creator.publicKey, 2n * BigInt(SOL));
    const id = await t.createLaunch(key, curveBody({ creator: creator.publicKey.toBase58(), signing: 'creator' }, { firstBuy: undefined }));
    const lines: string[] = [];
    expect((await signLaunch(`http://127.0.0.1:${listening.port}`, key, id, creator, (line) => lines.push(line))).status).toBe('signed');
    expect(lines).toEqual(['signed 0 setup', 'signed 1 create_curve', 'signed 2 create_curve', 'signed 3 close_nonces']);
    expect(await t.service.runner.drain()).toBe(1);
    const launch = await launchOf(key, id);
    expect(launch.status).toBe('complete');
    expect((await outsideTrader(t.service.chain).curve(new PublicKey(launch.results.pool.address))).creator.equals(creator.publicKey)).toBe(true);
  });
  it('npm run holder -- claim-fees: the creator claims its creator and partner fees with its own key (a real process); its balance rises by them, and the watcher delivers fees.claimed', async () => {
    const SECRET = 'whsec_test_0123456789abcdef';
    receiver = await startReceiver(systemClock);
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '', WATCH_POLL_INTERVAL: '200ms', WEBHOOK_POLL_INTERVAL_MS: '100ms' } });
    t.service.start();
    const key = await t.key('acme', [...WRITE]);
    const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
    server = listening.server;
    cluster = await startLocalCluster({ host: '127.0.0.1', port: 0 }, t.service.chain, silentLogger());
    if (!cluster) throw new Error('the local cluster did not start');
    const creator = Keypair.generate();
    await t.service.chain.requestAirdrop!(creator.publicKey, 2n * BigInt(SOL));
    const id = await t.createLaunch(key, curveBody({ creator: creator.publicKey.toBase58(), signing: 'creator', webhookUrl: receiver.url, webhookSecret: SECRET }, { firstBuy: undefined }));
    const base = `http://127.0.0.1:${listening.port}`;
    expect((await signLaunch(base, key, id, creator)).status).toBe('signed');
    const launch = await until('the launch to complete', 60_000, async () => {
      const got = await launchOf(key, id);
      return got.status === 'complete' || got.status === 'failed' ? got : undefined;
    });
    expect(launch.error).toBeNull();
    const pool = new PublicKey(launch.results.pool.address);

    // An outside trader's buys make trading fees: the creator's share and the partner's, both the creator's.
    const outside = outsideTrader(t.service.chain);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 20n * BigInt(SOL));
    await outside.buy(trader, pool, 3n * BigInt(SOL));
    const curve = await outside.curve(pool);
    const creatorFee = BigInt(curve.creatorQuoteFee.toString());
    const partnerFee = BigInt(curve.partnerQuoteFee.toString());
    expect(creatorFee > 0n && partnerFee > 0n).toBe(true);
    // The service still refuses to claim them, and says how the creator does.
    const refused = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, json: {} });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(`npm run holder -- claim-fees ${id}`);

    const fundingAddress = ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding.address;
    const fundingBefore = await balance(fundingAddress);
    const before = BigInt(await balance(creator.publicKey));
    const tokenAccountBefore = await balance(getAssociatedTokenAddressSync(new PublicKey(launch.results.mint), creator.publicKey, false, TOKEN_2022_PROGRAM_ID));
    const keypairFile = join(t.dir, 'creator.json');
    writeFileSync(keypairFile, JSON.stringify([...creator.secretKey]));
    const cli = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '..', '..', 'scripts', 'holder.ts'), 'claim-fees', id, keypairFile], {
      env: { ...process.env, SERVICE_URL: base, API_KEY: key, RPC_URL: cluster.url, RPC_WS_URL: cluster.wsUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    cli.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    expect(await new Promise<number | null>((resolve) => cli.on('exit', resolve)), stderr).toBe(0);
    const printed = /^claimed (\d+) lamports of fees to (\w+) \((-?\d+) net of the transaction fees\): (\w+) (\w+)$/.exec(stdout.trim());
    if (!printed) throw new Error(`unexpected output: ${stdout} ${stderr}`);
    const [, claimed, to, , creatorSignature, partnerSignature] = printed;
    expect(BigInt(claimed!)).toBe(creatorFee + partnerFee);
    expect(to).toBe(creator.publicKey.toBase58());

    // The creator's balance rose by the claimed fees less the two transactions' fees, which it paid; the owner's wallet paid nothing.
    // (One signature each, 5 000 lamports; the embedded chain charges no priority fee. Meteora's SDK
    // also opens the creator's token account for the launched token, its rent the creator's.)
    for (const sig of [creatorSignature!, partnerSignature!]) expect((await t.service.chain.history.getTransaction(sig))?.accountKeys[0]).toBe(creator.publicKey.toBase58());
    const tokenAccountRent = BigInt(await balance(getAssociatedTokenAddressSync(new PublicKey(launch.results.mint), creator.publicKey, false, TOKEN_2022_PROGRAM_ID)));
    expect(tokenAccountBefore).toBe(0);
    expect(tokenAccountRent > 0n).toBe(true);
    expect(BigInt(await balance(creator.publicKey)) - before).toBe(creatorFee + partnerFee - 2n * 5000n - tokenAccountRent);
    expect(await balance(fundingAddress)).toBe(fundingBefore);
    const after = await outside.curve(pool);
    expect([after.creatorQuoteFee.toString(), after.partnerQuoteFee.toString()]).toEqual(['0', '0']);

    // The watcher sees both claims on the curve: fees.claimed, signed, delivered to the launch's receiver.
    const WSOL = 'So11111111111111111111111111111111111111112';
    const delivered = await until('fees.claimed delivered twice', 30_000, async () => {
      const got = receiver!.requests.map((r) => verifyWebhook<any>(r.body, r.headers, SECRET).payload).filter((p) => p.launchId === id && p.event === 'fees.claimed');
      return got.length >= 2 ? got : undefined;
    });
    const bySignature = new Map(delivered.map((p) => [p.data.signature, p.data]));
    expect(bySignature.get(creatorSignature)).toMatchObject({ pool: pool.toBase58(), claimer: creator.publicKey.toBase58(), recipient: creator.publicKey.toBase58(), kind: 'creator', share: 'creator', source: 'curve', amounts: { [WSOL]: creatorFee.toString() } });
    expect(bySignature.get(partnerSignature)).toMatchObject({ pool: pool.toBase58(), claimer: creator.publicKey.toBase58(), kind: 'creator', share: 'partner', source: 'curve', amounts: { [WSOL]: partnerFee.toString() } });
    expect(delivered).toHaveLength(2);
  }, 180_000);
});

describe('a creator-signed bonding curve request', () => {
  it('refuses what only the creator’s signature could do later: fees to another recipient, auto-claim, vesting to another beneficiary, a DAO', () => {
    const creator = Keypair.generate().publicKey.toBase58();
    const fieldsOf = (overrides: Record<string, unknown>) => {
      const parsed = parseLaunchRequest(curveBody({ creator, signing: 'creator', ...overrides }), { requireHttps: false });
      return parsed.ok ? [] : parsed.errors.map((e) => e.field);
    };
    expect(fieldsOf({})).toEqual([]);
    expect(fieldsOf({ fees: { recipient: 'creator' } })).toEqual([]);
    expect(fieldsOf({ fees: { recipient: Keypair.generate().publicKey.toBase58() } })).toEqual(['fees.recipient']);
    expect(fieldsOf({ fees: { autoClaimMinLamports: '100000000' } })).toEqual(['fees.autoClaimMinLamports']);
    const vesting = { cliffSeconds: 0, periodSeconds: 60, periods: 2 };
    expect(fieldsOf({ allocations: { pool: 90, vesting: 10 }, vesting: { ...vesting, beneficiary: creator } })).toEqual([]);
    expect(fieldsOf({ allocations: { pool: 90, vesting: 10 }, vesting: { ...vesting, beneficiary: Keypair.generate().publicKey.toBase58() } })).toEqual(['vesting.beneficiary']);
    expect(fieldsOf({ tokenStandard: 'spl-token', dao: { name: 'Curve DAO', votingPeriodSeconds: 3600, quorumPercent: 10 } })).toEqual(['dao']);
    // A service-signed curve keeps every one of them.
    expect(parseLaunchRequest(curveBody({ creator, fees: { recipient: Keypair.generate().publicKey.toBase58(), autoClaimMinLamports: '1' } }), { requireHttps: false }).ok).toBe(true);
  });
});
