import { AuthorityType, createSetAuthorityInstruction, getAssociatedTokenAddressSync, NATIVE_MINT, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { Keypair, PublicKey, Transaction, VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { NonRetriableError } from '../../src/lib/retry.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { claimWsolAccount, dammKit, leUint, pendingPositionFees } from '../../src/chain/programs/dbc/dammPosition.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { findWallet, walletSigner } from '../../src/funding/wallets.js';
import { AutoClaimer } from '../../src/fees/autoClaim.js';
import { silentLogger } from '../../src/lib/logger.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { systemClock } from '../../src/lib/clock.js';
import { checkEnvelope } from '../../src/webhooks/eventSchemas.js';
import { curveBody, outsideTrader, until } from '../graduation/support/trading.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';
import { dammTrader } from './support/dammTrader.js';

// Needs the DBC and DAMM v2 binaries in CHAIN_PROGRAMS_DIR (public test fixtures, docs/programs.md);
// skipped cleanly without them. Runs on SQLite and on PostgreSQL (TEST_DATABASE_URL).
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];
const SECRET = 'whsec_test_0123456789abcdef';
const WSOL = NATIVE_MINT.toBase58();

/** Launches a curve, fills it with outside buys through Meteora's DBC SDK and waits for the service's graduation. */
export async function graduatedLaunch(t: TestService, key: string, body: Record<string, unknown>) {
  const id = await t.createLaunch(key, body);
  const launch = await until('the launch to complete', 60_000, async () => {
    const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    return got.status === 'complete' || got.status === 'failed' ? got : undefined;
  });
  expect(launch.error).toBeNull();
  const curve = new PublicKey(launch.results.pool.address);
  const trader = Keypair.generate();
  await t.service.chain.requestAirdrop!(trader.publicKey, 200_000_000_000n);
  const outside = outsideTrader(t.service.chain);
  for (let i = 0; i < 12 && (await outside.curve(curve)).migrationProgress === 0; i += 1) await outside.buy(trader, curve, 10_000_000_000n + BigInt(i));
  const graduation = await until('the graduation', 60_000, async () => {
    const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch.graduation;
    return got.state === 'done' ? got : undefined;
  });
  return { id, launch, curve, graduation, trader, ammPool: new PublicKey(graduation.ammPool), position: new PublicKey(graduation.positions[0].address) };
}

describe.skipIf(!haveBinaries(...IDS))(`creator fees of a graduated curve's DAMM v2 position${needs(...IDS)}`, () => {
  let t: TestService;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver(systemClock);
    // The service's own auto-claimer checks each launch once an hour here: the test makes checks due by hand.
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '', WATCH_POLL_INTERVAL: '200ms', WEBHOOK_POLL_INTERVAL_MS: '100ms', FEE_AUTO_CLAIM_INTERVAL: '1h' } });
    t.service.start();
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('swaps on the pool make position fees; GET reads them exactly, a claim pays the recipient what the program paid (SOL and token), once per Idempotency-Key; a second claim is empty', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const g = await graduatedLaunch(t, key, curveBody({ creator: creator.toBase58(), webhookUrl: receiver.url, webhookSecret: SECRET }));
    const wallet = ((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string;

    // The position's NFT is held by the owner's funding wallet after migration: it signs the claims.
    const nftAccount = await t.service.chain.getAccountInfo(new PublicKey(g.graduation.positions[0].nftAccount));
    expect(new PublicKey(nftAccount!.data.subarray(32, 64)).toBase58()).toBe(wallet);

    // Outside traders swap both ways on the DAMM v2 pool: buys pay their fee in the token, sells in SOL.
    const amm = dammTrader(t.service.chain);
    await amm.swap(g.trader, g.ammPool, 'buy', 5_000_000_000n);
    await amm.swap(g.trader, g.ammPool, 'sell', (await amm.tokenBalance(g.trader.publicKey, g.ammPool)) / 3n);
    await amm.swap(g.trader, g.ammPool, 'sell', (await amm.tokenBalance(g.trader.publicKey, g.ammPool)) / 3n);
    const mint = (await amm.poolOf(g.ammPool)).tokenAMint.toBase58() as string;

    const fees = ((await (await t.request(`/api/launches/${g.id}/fees`, { key })).json()) as any).fees;
    expect(fees.recipient).toBe(creator.toBase58());
    expect(fees.sources.map((s: any) => s.kind)).toEqual(['curve', 'amm-position']);
    const position = fees.sources[1];
    expect(position.address).toBe(g.position.toBase58());
    const sol = BigInt(position.claimable[WSOL]);
    const token = BigInt(position.claimable[mint]);
    expect(sol > 0n && token > 0n).toBe(true);
    const curveSol = BigInt(fees.sources[0].claimable[WSOL]);
    // Exactly the program's arithmetic: the same numbers from the raw accounts.
    const kit = await dammKit();
    const raw = pendingPositionFees(kit.decodePool((await t.service.chain.getAccountInfo(g.ammPool))!.data), kit.decodePosition((await t.service.chain.getAccountInfo(g.position))!.data));
    expect(raw).toEqual({ a: token, b: sol });
    // The byte offsets docs/programs.md gives agree with the IDL's decoding.
    const poolData = (await t.service.chain.getAccountInfo(g.ammPool))!.data;
    const posData = (await t.service.chain.getAccountInfo(g.position))!.data;
    expect([poolData.length, posData.length]).toEqual([1112, 408]);
    const decodedPool = kit.decodePool(poolData);
    const decodedPos = kit.decodePosition(posData);
    expect([leUint(poolData.subarray(488, 520)), leUint(poolData.subarray(520, 552))]).toEqual([decodedPool.feeAPerLiquidity, decodedPool.feeBPerLiquidity]);
    expect([leUint(posData.subarray(72, 104)), leUint(posData.subarray(104, 136)), posData.readBigUInt64LE(136), posData.readBigUInt64LE(144)]).toEqual([decodedPos.feeAPerTokenCheckpoint, decodedPos.feeBPerTokenCheckpoint, decodedPos.feeAPending, decodedPos.feeBPending]);
    expect([leUint(posData.subarray(152, 168)), leUint(posData.subarray(168, 184)), leUint(posData.subarray(184, 200))]).toEqual([decodedPos.unlockedLiquidity, decodedPos.vestedLiquidity, decodedPos.permanentLockedLiquidity]);
    expect(decodedPos.permanentLockedLiquidity > 0n).toBe(true);

    // The claim: the recipient gets exactly what the program paid out of the position, in SOL and in the token.
    const creatorToken = getAssociatedTokenAddressSync(new PublicKey(mint), creator, true, TOKEN_2022_PROGRAM_ID);
    const tokenOf = async () => (await t.service.chain.getAccountInfo(creatorToken))?.data.readBigUInt64LE(64) ?? 0n;
    // The creator already holds the first buy's tokens.
    const tokenBefore = await tokenOf();
    const before = BigInt(await t.service.chain.getBalance(creator));
    const walletBefore = BigInt(await t.service.chain.getBalance(new PublicKey(wallet)));
    const first = await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'claim-amm-1' } });
    expect(first.status).toBe(200);
    const claim = ((await first.json()) as any).claim;
    expect(claim.amounts).toEqual({ [WSOL]: (sol + curveSol).toString(), [mint]: token.toString() });
    expect(claim.signatures).toHaveLength(curveSol > 0n ? 3 : 2);
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(sol + curveSol);
    expect((await tokenOf()) - tokenBefore).toBe(token);
    const after = ((await (await t.request(`/api/launches/${g.id}/fees`, { key })).json()) as any).fees;
    expect(after.sources[1].claimable).toEqual({ [WSOL]: '0' });

    // What the wallet spent is in the ledger, one entry per transaction: fees and the recipient's token account, never the claimed SOL.
    const walletSpent = walletBefore - BigInt(await t.service.chain.getBalance(new PublicKey(wallet)));
    const entries = await t.service.db.selectFrom('funding_ledger').select(['signature', 'lamports', 'kind']).where('launch_id', '=', g.id).where('signature', 'in', claim.signatures).execute();
    expect(entries.every((e) => e.kind === 'spend')).toBe(true);
    expect(entries.map((e) => e.signature).sort()).toEqual([...claim.signatures].sort());
    expect(entries.reduce((sum, e) => sum + BigInt(e.lamports), 0n)).toBe(walletSpent);
    expect(walletSpent > 0n && walletSpent < 3_000_000n).toBe(true);

    // The same key replays the claim and sends nothing; a new claim is empty.
    const again = await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'claim-amm-1' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as any).claim).toEqual(claim);
    const empty = await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, json: {} });
    expect(((await empty.json()) as any).claim).toEqual({ signatures: [], amounts: {} });
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(sol + curveSol);

    // MCP's get_fees reads the same sources.
    const mcp = async (name: string, args: Record<string, unknown>) =>
      ((await (await t.request('/mcp', { method: 'POST', key, headers: { accept: 'application/json, text/event-stream' }, json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } } })).json()) as any).result.structuredContent;
    expect((await mcp('get_fees', { launchId: g.id })).fees.sources.map((s: any) => s.kind)).toEqual(['curve', 'amm-position']);

    // fees.claimed for the position, delivered signed.
    const delivered = await until('fees.claimed delivered', 30_000, async () =>
      receiver.requests.map((r) => verifyWebhook<any>(r.body, r.headers, SECRET).payload).find((p) => p.launchId === g.id && p.event === 'fees.claimed' && p.data.source === 'amm-position'),
    );
    expect(checkEnvelope(delivered)).toEqual({ ok: true });
    expect(delivered.data).toMatchObject({ pool: g.ammPool.toBase58(), position: g.position.toBase58(), claimer: wallet, recipient: creator.toBase58(), amounts: { [WSOL]: sol.toString(), [mint]: token.toString() }, kind: 'creator', source: 'amm-position', auto: false });
    expect(claim.signatures).toContain(delivered.data.signature);
    expect(claim.signatures).toContain(delivered.data.paymentSignature);
  }, 180_000);
  it('autoClaimMinLamports: the claim fires once the claimable SOL reaches it, before and after graduation, once however many auto-claimers race', async () => {
    const key = await t.key('auto', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const min = 100_000_000n;
    const id = await t.createLaunch(key, curveBody({ creator: creator.toBase58(), fees: { recipient: 'creator', autoClaimMinLamports: min.toString() } }));
    const launch = await until('the launch to complete', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.status === 'complete' ? got : undefined;
    });
    const curve = new PublicKey(launch.results.pool.address);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 200_000_000_000n);
    const outside = outsideTrader(t.service.chain);

    // The service's job turns only when a round runs it (its own loop stopped, so no check runs unawaited); two more jobs
    // besides it, as other instances would run; every round makes every check due at once.
    await t.service.autoClaimer.stop();
    const jobs = [0, 1].map(() => new AutoClaimer({ db: t.service.db, clock: systemClock, logger: silentLogger(), fees: t.service.fees, intervalMs: 3_600_000 }));
    const autoClaims = async () => (await t.service.db.selectFrom('fee_claims' as never).selectAll().where('launch_id' as never, '=', id as never).where('origin' as never, '=', 'auto' as never).execute()).filter((r: any) => r.state === 'done' && JSON.parse(r.signatures).length > 0) as any[];
    const round = async () => {
      await t.service.db.updateTable('fee_auto_claims' as never).set({ next_check_at: 0 } as never).where('launch_id' as never, '=', id as never).execute();
      const before = jobs.reduce((n, j) => n + j.claimed, t.service.autoClaimer.claimed);
      await Promise.all([...jobs.map((j) => j.runOnce()), t.service.autoClaimer.runOnce()]);
      return jobs.reduce((n, j) => n + j.claimed, t.service.autoClaimer.claimed) - before;
    };
    const balance = async () => BigInt(await t.service.chain.getBalance(creator));

    // Below the minimum nothing is claimed.
    await outside.buy(trader, curve, 10_000_000_000n);
    const small = (await outside.curve(curve)).creatorQuoteFee;
    expect(small > 0n && small < min).toBe(true);
    expect(await round()).toBe(0);
    expect(await autoClaims()).toHaveLength(0);

    // Before graduation: the curve's fee reaches it; one of the racing jobs claims it, once.
    await outside.buy(trader, curve, 20_000_000_000n);
    const owed = (await outside.curve(curve)).creatorQuoteFee;
    expect(owed >= min).toBe(true);
    let paid = await balance();
    expect(await round()).toBe(1);
    expect(await balance() - paid).toBe(owed);
    expect(await round()).toBe(0);
    expect(await autoClaims()).toHaveLength(1);

    // After graduation: the curve's fee left from the filling buys, then the DAMM v2 position's.
    for (let i = 0; i < 12 && (await outside.curve(curve)).migrationProgress === 0; i += 1) await outside.buy(trader, curve, 10_000_000_000n + BigInt(i));
    const graduation = await until('the graduation', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch.graduation;
      return got.state === 'done' ? got : undefined;
    });
    const left = (await outside.curve(curve)).creatorQuoteFee;
    paid = await balance();
    expect(await round()).toBe(left >= min ? 1 : 0);
    if (left >= min) expect(await balance() - paid).toBe(left);
    const ammPool = new PublicKey(graduation.ammPool);
    const amm = dammTrader(t.service.chain);
    await amm.swap(trader, ammPool, 'sell', (await amm.tokenBalance(trader.publicKey, ammPool)) / 2n);
    const fees = ((await (await t.request(`/api/launches/${id}/fees`, { key })).json()) as any).fees;
    const positionSol = BigInt(fees.sources.find((s: any) => s.kind === 'amm-position').claimable[WSOL]);
    expect(positionSol >= min).toBe(true);
    paid = await balance();
    expect(await round()).toBe(1);
    expect(await balance() - paid).toBe(positionSol);
    expect(await round()).toBe(0);

    const claims = await autoClaims();
    expect(claims).toHaveLength(left >= min ? 3 : 2);
    const events = (await t.service.db.selectFrom('outbox_events').select('body').where('launch_id', '=', id).where('event', '=', 'fees.claimed').execute()).map((e) => JSON.parse(e.body).data);
    expect(events.every((e) => e.auto === true)).toBe(true);
    expect(events.filter((e) => e.source === 'amm-position')).toHaveLength(1);
    expect(events.filter((e) => e.source === 'amm-position')[0].amounts[WSOL]).toBe(positionSol.toString());
  }, 240_000);
  it("a position claim interrupted after its payment was recorded and before it was sent is finished by the next request with the key: the recorded payment goes out, the recipient is paid once", async () => {
    const key = await t.key('crash', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const g = await graduatedLaunch(t, key, curveBody({ creator: creator.toBase58() }));
    // The curve's own fee first, so the interrupted claim has the position alone.
    expect((await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, json: {} })).status).toBe(200);
    const amm = dammTrader(t.service.chain);
    await amm.swap(g.trader, g.ammPool, 'sell', (await amm.tokenBalance(g.trader.publicKey, g.ammPool)) / 3n);
    const before = BigInt(await t.service.chain.getBalance(creator));

    // A process that dies once the payment is recorded: the claim landed, the SOL waits in the claim's account.
    const dying = t.service.fees.withBeforeSend(async (row) => {
      const recorded = (await t.service.db.selectFrom('fee_claims' as never).select(['pending' as never]).where('id' as never, '=', row.id as never).executeTakeFirstOrThrow()) as { pending: string };
      if (Object.keys(JSON.parse(recorded.pending)).some((label) => label.startsWith('payment:'))) throw new Error('killed before the payment was sent');
    });
    await expect(dying.claim('crash', g.id, { idempotencyKey: 'crash-amm' })).rejects.toThrow();
    const row = (await t.service.db.selectFrom('fee_claims' as never).selectAll().where('idempotency_key' as never, '=', 'crash-amm' as never).executeTakeFirstOrThrow()) as any;
    expect(row.state).toBe('running');
    const pending = JSON.parse(row.pending);
    expect(Object.keys(pending).sort()).toEqual([`amm-position:${g.position.toBase58()}`, `payment:${g.position.toBase58()}`]);
    expect(BigInt(await t.service.chain.getBalance(creator))).toBe(before);

    const resumed = await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'crash-amm' } });
    expect(resumed.status).toBe(200);
    const claim = ((await resumed.json()) as any).claim;
    expect(claim.signatures).toEqual([pending[`amm-position:${g.position.toBase58()}`].signature, pending[`payment:${g.position.toBase58()}`].signature]);
    const paid = BigInt(claim.amounts[WSOL]);
    expect(paid > 0n).toBe(true);
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(paid);
    const again = await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'crash-amm' } });
    expect(((await again.json()) as any).claim).toEqual(claim);
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(paid);
    expect(await t.service.db.selectFrom('outbox_events').select('id').where('launch_id', '=', g.id).where('event', '=', 'fees.claimed').execute()).toHaveLength(2);
  }, 180_000);
  it('a position claim whose payment fails after the claim landed stays running; the next auto-claim check (or claim request) pays the claimed SOL, exactly once', async () => {
    const key = await t.key('unpaid', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const g = await graduatedLaunch(t, key, curveBody({ creator: creator.toBase58() }));
    expect((await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, json: {} })).status).toBe(200);
    const amm = dammTrader(t.service.chain);
    await amm.swap(g.trader, g.ammPool, 'sell', (await amm.tokenBalance(g.trader.publicKey, g.ammPool)) / 3n);
    const before = BigInt(await t.service.chain.getBalance(creator));

    // The payment's send answers a program error once (injected: the chain here cannot be made to
    // refuse that transfer, so the test's chain refuses those bytes, as a failing preflight does).
    const chain = t.service.chain;
    const send = chain.sendRawTransaction.bind(chain);
    let refuse: string | undefined;
    let refused = 0;
    const failing = t.service.fees.withBeforeSend(async (row) => {
      const recorded = (await t.service.db.selectFrom('fee_claims' as never).select(['pending' as never]).where('id' as never, '=', row.id as never).executeTakeFirstOrThrow()) as { pending: string };
      const payment = Object.entries(JSON.parse(recorded.pending) as Record<string, { signature: string }>).find(([label]) => label.startsWith('payment:'));
      if (payment && refused === 0) refuse = payment[1].signature;
    });
    chain.sendRawTransaction = async (bytes: Uint8Array) => {
      if (refuse !== undefined && bs58.encode(VersionedTransaction.deserialize(bytes).signatures[0]!) === refuse) {
        refuse = undefined;
        refused += 1;
        throw new NonRetriableError('program_error', 'transaction failed: custom program error (injected)');
      }
      return send(bytes);
    };
    try {
      const first = await failing.claim('unpaid', g.id, { idempotencyKey: 'unpaid-1' }).then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(refused).toBe(1);
      expect(first?.code).toBe('claim_payment_failed');
    } finally {
      chain.sendRawTransaction = send;
    }
    // The claim landed; the SOL is in the claim's wrapped-SOL account, not the creator's; the claim is running, not failed.
    const row = (await t.service.db.selectFrom('fee_claims' as never).selectAll().where('idempotency_key' as never, '=', 'unpaid-1' as never).executeTakeFirstOrThrow()) as any;
    expect(row.state).toBe('running');
    expect(Object.keys(JSON.parse(row.pending))).toEqual([`amm-position:${g.position.toBase58()}`]);
    expect(BigInt(await t.service.chain.getBalance(creator))).toBe(before);

    // The auto-claimer's next check finishes it, though what is claimable now is far below its
    // minimum: the payment signed anew pays the creator (a claim request with another key does the same).
    await t.service.fees.autoClaim('unpaid', g.id, 10n ** 18n);
    const done = (await t.service.db.selectFrom('fee_claims' as never).selectAll().where('idempotency_key' as never, '=', 'unpaid-1' as never).executeTakeFirstOrThrow()) as any;
    expect(done.state).toBe('done');
    const paid = BigInt(JSON.parse(done.amounts)[WSOL]);
    expect(paid > 0n).toBe(true);
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(paid);
    // Asked again, nothing more is paid.
    expect((await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'unpaid-1' } })).status).toBe(200);
    expect((await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, json: {} })).status).toBe(200);
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(paid);
  }, 240_000);
  it('a position claim payment that lands and fails on chain: its fee is a spend entry of the ledger (once), and the claim spends, outside any reservation, count in spentTodayLamports', async () => {
    const key = await t.key('failpay', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const g = await graduatedLaunch(t, key, curveBody({ creator: creator.toBase58() }));
    expect((await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, json: {} })).status).toBe(200);
    const amm = dammTrader(t.service.chain);
    await amm.swap(g.trader, g.ammPool, 'sell', (await amm.tokenBalance(g.trader.publicKey, g.ammPool)) / 3n);
    const chain = t.service.chain;
    const wallet = walletSigner(createSecretBox(t.config.secretKey), (await findWallet(t.service.db, 'failpay'))!);
    const funding = async () => ((await (await t.request('/api/funding', { key })).json()) as any).funding;
    const ledger = async () => ((await (await t.request('/api/funding/ledger?limit=100', { key })).json()) as any).entries as Array<{ kind: string; lamports: string; signature: string | null; launchId: string | null }>;
    const sendBy = async (feePayer: Keypair, signers: Keypair[], ...ix: Parameters<Transaction['add']>) => {
      const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
      const tx = new Transaction().add(...ix);
      tx.recentBlockhash = blockhash;
      tx.feePayer = feePayer.publicKey;
      tx.sign(feePayer, ...signers);
      await chain.confirmTransaction(await chain.sendRawTransaction(tx.serialize()), lastValidBlockHeight);
    };
    const spentBefore = BigInt((await funding()).spentTodayLamports);
    const known = new Set((await ledger()).map((e) => e.signature));
    const balanceBefore = BigInt(await chain.getBalance(wallet.publicKey));

    // Once the payment is recorded and before it is sent, the claim's wrapped-SOL account is handed
    // to another owner (a real SetAuthority, signed by the wallet, paid by the trader): the payment's
    // CloseAccount then fails on chain, and the wallet pays its fee.
    const thief = Keypair.generate();
    let payment: string | undefined;
    const failing = t.service.fees.withBeforeSend(async (row) => {
      const recorded = (await t.service.db.selectFrom('fee_claims' as never).select(['pending' as never]).where('id' as never, '=', row.id as never).executeTakeFirstOrThrow()) as { pending: string };
      const found = Object.entries(JSON.parse(recorded.pending) as Record<string, { signature: string }>).find(([label]) => label.startsWith('payment:'));
      if (!found || payment !== undefined) return;
      payment = found[1].signature;
      const wsol = claimWsolAccount(wallet.publicKey, row.id, g.position.toBase58()).address;
      await sendBy(g.trader, [wallet], createSetAuthorityInstruction(wsol, wallet.publicKey, AuthorityType.AccountOwner, thief.publicKey));
    });
    const first = await failing.claim('failpay', g.id, { idempotencyKey: 'failpay-1' }).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    expect(first?.code).toBe('claim_payment_failed');
    expect(payment).toBeDefined();
    // A payment signed anew on the same blockhash would be the failed one's very bytes: the retry waits for the next.
    const failedOn = (await chain.getLatestBlockhash()).blockhash;
    const landed = await chain.history.getTransaction(payment!);
    expect(landed).not.toBeNull();
    const fee = landed!.preBalances[0]! - landed!.postBalances[0]!;
    expect(fee > 0n).toBe(true);
    // The failed payment's fee is in the ledger, with its signature.
    const failedEntries = (await ledger()).filter((e) => e.signature === payment);
    expect(failedEntries).toEqual([expect.objectContaining({ kind: 'spend', lamports: String(fee), launchId: g.id })]);

    // The account is handed back; the next claim request pays the creator, and the failed fee is not written twice.
    const claimRow = (await t.service.db.selectFrom('fee_claims' as never).selectAll().where('idempotency_key' as never, '=', 'failpay-1' as never).executeTakeFirstOrThrow()) as any;
    await sendBy(g.trader, [thief], createSetAuthorityInstruction(claimWsolAccount(wallet.publicKey, claimRow.id, g.position.toBase58()).address, thief.publicKey, AuthorityType.AccountOwner, wallet.publicKey));
    await until('a new blockhash', 30_000, async () => ((await chain.getLatestBlockhash()).blockhash !== failedOn ? true : undefined));
    const done = await t.request(`/api/launches/${g.id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'failpay-1' } });
    expect({ status: done.status, body: done.status === 200 ? undefined : await done.text() }).toEqual({ status: 200, body: undefined });
    const entries = await ledger();
    expect(entries.filter((e) => e.signature === payment)).toHaveLength(1);

    // The ledger adds up: what left the wallet since is the claim's spends, the failed fee included
    // (the claimed SOL passes through to the creator).
    const claimSpends = entries.filter((e) => e.launchId === g.id && e.kind === 'spend' && !known.has(e.signature));
    expect(claimSpends.length).toBe(3); // the claim, the failed payment, the payment
    const spent = claimSpends.reduce((sum, e) => sum + BigInt(e.lamports), 0n);
    expect(balanceBefore - BigInt(await chain.getBalance(wallet.publicKey))).toBe(spent);
    // Those spends came after the launch's reservation was released (at graduation): they count in today's use.
    expect(BigInt((await funding()).spentTodayLamports) - spentBefore).toBe(spent);
    // And in maxLamportsPerDay: a limit one lamport short of today's launch, those spends and the next quote refuses the next create.
    const admin = await t.key('failpay-admin', ['admin']);
    const next = BigInt(((await (await t.request('/api/launches/quote', { method: 'POST', key, json: curveBody({ creator: creator.toBase58() }) })).json()) as any).quote.totalLamports);
    expect((await t.request('/api/funding/failpay/limits', { method: 'PUT', key: admin, json: { maxLamportsPerDay: String(spentBefore + spent + next - 1n) } })).status).toBe(200);
    const refused = await t.request('/api/launches', { method: 'POST', key, json: curveBody({ creator: creator.toBase58() }) });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.details.limit).toBe('maxLamportsPerDay');
  }, 240_000);
});
