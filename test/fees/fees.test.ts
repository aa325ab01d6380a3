import { NATIVE_MINT } from '@solana/spl-token';
import { Keypair, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { systemClock } from '../../src/lib/clock.js';
import { checkEnvelope } from '../../src/webhooks/eventSchemas.js';
import { curveBody, outsideTrader, until } from '../graduation/support/trading.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';

// Needs the DBC and DAMM v2 binaries in CHAIN_PROGRAMS_DIR (public test fixtures, docs/programs.md);
// skipped cleanly without them. Runs on SQLite and on PostgreSQL (TEST_DATABASE_URL).
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];
const SECRET = 'whsec_test_0123456789abcdef';
const WSOL = NATIVE_MINT.toBase58();

describe.skipIf(!haveBinaries(...IDS))(`creator fees of a bonding curve${needs(...IDS)}`, () => {
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

  it('outside buys make fees claimable; a claim pays the creator once per Idempotency-Key, a second claim is empty, fees.claimed arrives signed, the fee is in the ledger', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const body = curveBody({ creator: creator.toBase58(), webhookUrl: receiver.url, webhookSecret: SECRET }, { graduationMarketCap: '4000' });
    const id = await t.createLaunch(key, body);
    const launch = await until('the launch to complete', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.status === 'complete' || got.status === 'failed' ? got : undefined;
    });
    expect(launch.error).toBeNull();
    const pool = new PublicKey(launch.results.pool.address);
    const wallet = ((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string;

    // Outside traders buy through Meteora's SDK: the curve's creator fee grows.
    const outside = outsideTrader(t.service.chain);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 20_000_000_000n);
    const feeBefore = (await outside.curve(pool)).creatorQuoteFee;
    await outside.buy(trader, pool, 3_000_000_000n);
    await outside.buy(trader, pool, 2_000_000_000n);
    const onChain = (await outside.curve(pool)).creatorQuoteFee;
    expect(onChain > feeBefore).toBe(true);

    const fees = ((await (await t.request(`/api/launches/${id}/fees`, { key })).json()) as any).fees;
    expect(fees).toEqual({ recipient: creator.toBase58(), sources: [{ kind: 'curve', address: pool.toBase58(), claimable: { [WSOL]: onChain.toString() } }] });

    // The claim: the creator's SOL balance grows by exactly what was claimable; the curve's fee is 0.
    const before = await t.service.chain.getBalance(creator);
    const first = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'claim-1' } });
    expect(first.status).toBe(200);
    const claim = ((await first.json()) as any).claim;
    expect(claim.amounts).toEqual({ [WSOL]: onChain.toString() });
    expect(claim.signatures).toHaveLength(1);
    expect(BigInt(await t.service.chain.getBalance(creator)) - BigInt(before)).toBe(onChain);
    expect((await outside.curve(pool)).creatorQuoteFee).toBe(0n);

    // The same key answers the same claim and sends nothing; a new claim finds nothing.
    const again = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'claim-1' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as any).claim).toEqual(claim);
    const empty = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, json: {} });
    expect(((await empty.json()) as any).claim).toEqual({ signatures: [], amounts: {} });
    expect(BigInt(await t.service.chain.getBalance(creator)) - BigInt(before)).toBe(onChain);

    // The MCP tools call the same routes: claim_fees with a new key finds nothing, get_fees shows 0.
    const mcp = async (name: string, args: Record<string, unknown>) =>
      ((await (await t.request('/mcp', { method: 'POST', key, headers: { accept: 'application/json, text/event-stream' }, json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } } })).json()) as any).result.structuredContent;
    expect(await mcp('claim_fees', { launchId: id, idempotencyKey: 'agent-claim' })).toEqual({ claim: { signatures: [], amounts: {} } });
    expect((await mcp('get_fees', { launchId: id })).fees.sources[0].claimable).toEqual({ [WSOL]: '0' });

    // The wallet paid the transaction's fee, and the ledger has it.
    const tx = await t.service.chain.history.getTransaction(claim.signatures[0]);
    expect(tx?.accountKeys[0]).toBe(wallet);
    const paid = tx!.preBalances[0]! - tx!.postBalances[0]!;
    expect(paid).toBeGreaterThan(0n);
    expect(paid).toBeLessThan(100_000n);
    const entry = await t.service.db.selectFrom('funding_ledger').selectAll().where('signature', '=', claim.signatures[0]).executeTakeFirstOrThrow();
    expect(entry).toMatchObject({ kind: 'spend', launch_id: id, owner: 'acme' });
    expect(BigInt(entry.lamports)).toBe(paid);

    // One fees.claimed, recorded and delivered signed to the launch's URL.
    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id).where('event', '=', 'fees.claimed').execute();
    expect(events).toHaveLength(1);
    expect(checkEnvelope(JSON.parse(events[0]!.body))).toEqual({ ok: true });
    const delivered = await until('fees.claimed delivered', 30_000, async () =>
      receiver.requests.map((r) => verifyWebhook<any>(r.body, r.headers, SECRET).payload).find((p) => p.launchId === id && p.event === 'fees.claimed'),
    );
    expect(delivered.data).toMatchObject({ pool: pool.toBase58(), claimer: wallet, recipient: creator.toBase58(), amounts: { [WSOL]: onChain.toString() }, signature: claim.signatures[0], kind: 'creator', source: 'curve' });
  });

  it('a claim interrupted after its transaction was recorded and before it was sent is finished by the next request with the same key: sent once, paid once', async () => {
    const key = await t.key('acme3', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey;
    const id = await t.createLaunch(key, curveBody({ creator: creator.toBase58() }, { graduationMarketCap: '4000' }));
    const launch = await until('the launch to complete', 60_000, async () => {
      const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      return got.status === 'complete' ? got : undefined;
    });
    const pool = new PublicKey(launch.results.pool.address);
    const outside = outsideTrader(t.service.chain);
    const trader = Keypair.generate();
    await t.service.chain.requestAirdrop!(trader.publicKey, 10_000_000_000n);
    await outside.buy(trader, pool, 2_000_000_000n);
    const owed = (await outside.curve(pool)).creatorQuoteFee;
    const before = BigInt(await t.service.chain.getBalance(creator));

    // A process that dies between recording and sending: the same use case over the service's database and chain.
    const dying = t.service.fees.withBeforeSend(() => {
      throw new Error('killed before send');
    });
    await expect(dying.claim('acme3', id, { idempotencyKey: 'crash-1' })).rejects.toThrow();
    const row = (await t.service.db.selectFrom('fee_claims' as never).selectAll().where('launch_id' as never, '=', id as never).executeTakeFirstOrThrow()) as any;
    expect(row.state).toBe('running');
    expect(JSON.parse(row.pending)).toHaveProperty([`curve:${pool.toBase58()}`]);
    expect(BigInt(await t.service.chain.getBalance(creator))).toBe(before);

    // The next request with the key resumes it: the recorded bytes go out, the creator is paid once.
    const resumed = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'crash-1' } });
    expect(resumed.status).toBe(200);
    const claim = ((await resumed.json()) as any).claim;
    expect(claim).toEqual({ signatures: [JSON.parse(row.pending)[`curve:${pool.toBase58()}`].signature], amounts: { [WSOL]: owed.toString() } });
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(owed);
    const again = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': 'crash-1' } });
    expect(((await again.json()) as any).claim).toEqual(claim);
    expect(BigInt(await t.service.chain.getBalance(creator)) - before).toBe(owed);
    expect(await t.service.db.selectFrom('outbox_events').select('id').where('launch_id', '=', id).where('event', '=', 'fees.claimed').execute()).toHaveLength(1);
  });

  it('another owner gets 404 and bad input 400 naming the field, with nothing sent', async () => {
    const key = await t.key('acme2', ['launches:write', 'launches:read']);
    const other = await t.key('intruder', ['launches:write', 'launches:read']);
    const id = await t.createLaunch(key, curveBody({}, { firstBuy: undefined }));
    await until('the launch to complete', 60_000, async () => (((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch.status === 'complete' ? true : undefined));
    expect((await t.request(`/api/launches/${id}/fees`, { key: other })).status).toBe(404);
    expect((await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key: other })).status).toBe(404);
    expect((await t.request(`/api/launches/lch_nope/fees`, { key })).status).toBe(404);
    const bad = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, json: { recipient: 'x' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.details.fields).toEqual([{ field: 'recipient', message: 'unknown field' }]);
    const badKey = await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key, headers: { 'Idempotency-Key': ' ' } });
    expect(badKey.status).toBe(400);
    expect(((await badKey.json()) as any).error.details.fields[0].field).toBe('Idempotency-Key');
    const readOnly = await t.key('acme2', ['launches:read']);
    expect((await t.request(`/api/launches/${id}/fees/claim`, { method: 'POST', key: readOnly })).status).toBe(403);
    const rows = await t.service.db.selectFrom('fee_claims' as never).selectAll().execute();
    expect(rows.filter((r: any) => r.launch_id === id)).toHaveLength(0);
  });
});
