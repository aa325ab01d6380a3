import { PublicKey } from '@solana/web3.js';
import { afterEach, describe, expect, it } from 'vitest';
import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { manualClock } from '../../src/lib/clock.js';
import { creatorWallet, signAll, signingOf } from './support/creator.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;
const balance = (address: string | PublicKey) => t!.service.chain.getBalance(new PublicKey(address));

describe('creator-signed launches', () => {
  it('completes a token-2022 launch the creator signed with plain ed25519: the owner’s wallet and the service payer untouched, the creator paid its quote', async () => {
    t = await startTestService();
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(2 * SOL));
    const funding = ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding;
    const body = launchBody({ creator: creator.address, signing: 'creator' });

    const quoteRes = await t.request('/api/launches/quote', { method: 'POST', key, json: body });
    expect(quoteRes.status).toBe(200);
    const quote = ((await quoteRes.json()) as { quote: Record<string, any> }).quote;
    expect(quote).toMatchObject({ signing: 'creator', payer: creator.address, balanceLamports: String(2 * SOL), availableLamports: String(2 * SOL), sufficient: true });
    const returned = (quote.accounts as Array<{ role: string; rentLamports: string; returned?: true }>).filter((a) => a.returned).reduce((n, a) => n + Number(a.rentLamports), 0);

    const fundingBefore = await balance(funding.address);
    const payerBefore = await balance(t.service.chain.payer.publicKey);
    const created = await t.request('/api/launches', { method: 'POST', key, json: body });
    expect(created.status).toBe(202);
    const launch = ((await created.json()) as { launch: { id: string; status: string; signing: string } }).launch;
    expect(launch).toMatchObject({ status: 'awaiting_signatures', signing: 'creator' });

    const setup = await signingOf(t, key, launch.id);
    expect(setup.status).toBe('awaiting_signatures');
    expect(setup.transactions).toEqual([expect.objectContaining({ index: 0, step: 'setup', signers: [creator.address], signed: false })]);
    expect(Date.parse(setup.expiresAt)).toBeGreaterThan(Date.now());
    const first = await signAll(t, key, launch.id, creator);
    expect(first.status).toBe(200);
    // The setup landed: every transaction of the launch is offered on its own durable nonce.
    expect(first.body.signing!.transactions.map((tx) => [tx.step, tx.signed])).toEqual([
      ['setup', true],
      ['create_mint', false],
      ['distribute_supply', false],
      ['close_nonces', false],
    ]);
    expect(await t.service.runner.drain()).toBe(0); // nothing runs before every signature is in

    const second = await signAll(t, key, launch.id, creator);
    expect(second.status).toBe(200);
    expect(second.body.signing!.status).toBe('signed');
    expect(await t.service.runner.drain()).toBe(1);

    const done = ((await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as { launch: { status: string; results: { mint: string; allocations: Array<{ owner: string }> } } }).launch;
    expect(done.status).toBe('complete');
    const info = await t.service.chain.getAccountInfo(new PublicKey(done.results.mint));
    expect(info?.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(done.results.allocations.every((a) => a.owner === creator.address)).toBe(true);

    expect(await balance(funding.address)).toBe(fundingBefore);
    expect(await balance(t.service.chain.payer.publicKey)).toBe(payerBefore);
    // On the embedded chain (no priority fee) the creator paid exactly the quote, less the nonce rent it got back.
    expect(2 * SOL - (await balance(creator.address))).toBe(Number(quote.totalLamports) - returned);
  });
});

describe('the signing request', () => {
  it('is a pure read: a signed setup is sent, and an expired one offered fresh, by the signing loop, never by GET', async () => {
    const clock = manualClock(Date.now());
    t = await startTestService({ clock });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(SOL));
    const db = t.service.db;
    const state = async (id: string) => ({
      signing: await db.selectFrom('launch_signing').selectAll().where('launch_id', '=', id).execute(),
      txs: await db.selectFrom('launch_signing_txs').selectAll().where('launch_id', '=', id).orderBy('idx').execute(),
      events: await db.selectFrom('outbox_events').select('event').where('launch_id', '=', id).execute(),
      creator: await balance(creator.address),
    });
    const metric = async () => Number(/^launch_service_launches_awaiting_signatures (\d+)$/m.exec(await (await t!.request('/metrics')).text())?.[1]);

    // A signed setup, stored as the POST stores it but not sent: reads leave it so.
    const signed = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const setup = (await signingOf(t, key, signed)).transactions[0]!;
    await db.updateTable('launch_signing_txs').set({ signature: creator.sign(Buffer.from(setup.message, 'base64')), signed_at: clock.now() }).where('launch_id', '=', signed).where('idx', '=', 0).execute();
    const before = await state(signed);
    for (let i = 0; i < 3; i++) expect((await signingOf(t, key, signed)).transactions.map((tx) => [tx.step, tx.signed])).toEqual([['setup', true]]);
    expect(await state(signed)).toEqual(before);
    expect(before.creator).toBe(SOL); // nothing sent
    expect(await metric()).toBe(1);

    // The loop sends it, sees it landed and offers the launch's transactions.
    expect(await t.service.signing.advanceSetups()).toBe(1);
    expect((await signingOf(t, key, signed)).transactions.map((tx) => [tx.step, tx.signed])).toEqual([
      ['setup', true],
      ['create_mint', false],
      ['distribute_supply', false],
      ['close_nonces', false],
    ]);
    expect(await balance(creator.address)).toBeLessThan(SOL);
    expect(await t.service.signing.advanceSetups()).toBe(0); // nothing left in a setup round

    // An unsigned setup past its blockhash: GET shows it as it is (expiresAt passed) until the loop replaces it.
    const unsigned = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const offered = await signingOf(t, key, unsigned);
    expect(await metric()).toBe(2);
    clock.advance(61_000);
    const stale = await state(unsigned);
    const read = await signingOf(t, key, unsigned);
    expect(read.transactions[0]!.message).toBe(offered.transactions[0]!.message);
    expect(Date.parse(read.expiresAt)).toBeLessThanOrEqual(clock.now());
    expect(await state(unsigned)).toEqual(stale);
    expect(await t.service.signing.advanceSetups()).toBe(1);
    const fresh = await signingOf(t, key, unsigned);
    expect(fresh.transactions).toEqual([expect.objectContaining({ index: 0, step: 'setup', signed: false })]);
    expect(fresh.transactions[0]!.message).not.toBe(offered.transactions[0]!.message);
    expect(Date.parse(fresh.expiresAt)).toBeGreaterThan(clock.now());
    // Signed through the API, the fresh setup lands at once and the launch's round follows.
    expect((await signAll(t, key, unsigned, creator)).body.signing!.transactions).toHaveLength(4);
  });
});

describe('creator signatures', () => {
  it('refuses a signature that is not the creator’s over that message with 422 invalid_signature, storing none of the batch', async () => {
    t = await startTestService();
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    const stranger = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(SOL));
    const id = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const post = (signatures: unknown) => t!.request(`/api/launches/${id}/signatures`, { method: 'POST', key, json: { signatures } });

    const setup = (await signingOf(t, key, id)).transactions[0]!;
    const message = Buffer.from(setup.message, 'base64');
    const wrongKey = await post([{ index: 0, signature: stranger.sign(message) }]);
    expect(wrongKey.status).toBe(422);
    expect(((await wrongKey.json()) as { error: { code: string; details: unknown } }).error).toMatchObject({ code: 'invalid_signature', details: { index: 0 } });
    const wrongMessage = await post([{ index: 0, signature: creator.sign(Buffer.concat([message, Buffer.from([0])])) }]);
    expect(wrongMessage.status).toBe(422);
    const malformed = await post([{ index: 0, signature: 'not-base58!' }, { index: -1, signature: creator.sign(message) }]);
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { details: { fields: Array<{ field: string }> } } }).error.details.fields.map((f) => f.field)).toEqual(['signatures.0.signature', 'signatures.1.index']);
    expect((await post([{ index: 7, signature: creator.sign(message) }])).status).toBe(400);
    expect((await signingOf(t, key, id)).transactions.map((tx) => tx.signed)).toEqual([false]);
    expect(await t.service.chain.getBalance(new PublicKey(creator.address))).toBe(SOL); // nothing was sent

    expect((await signAll(t, key, id, creator)).status).toBe(200);
    const offered = (await signingOf(t, key, id)).transactions.filter((tx) => !tx.signed);
    expect(offered.length).toBe(3);
    // One good signature beside a bad one: neither is stored.
    const mixed = await post([
      { index: offered[0]!.index, signature: creator.sign(Buffer.from(offered[0]!.message, 'base64')) },
      { index: offered[1]!.index, signature: stranger.sign(Buffer.from(offered[1]!.message, 'base64')) },
    ]);
    expect(mixed.status).toBe(422);
    expect(((await mixed.json()) as { error: { details: unknown } }).error.details).toEqual({ index: offered[1]!.index });
    expect((await signingOf(t, key, id)).transactions.map((tx) => tx.signed)).toEqual([true, false, false, false]);

    const other = await t.key('other', [...WRITE]);
    expect((await t.request(`/api/launches/${id}/signing`, { key: other })).status).toBe(404);
    expect((await t.request(`/api/launches/${id}/signatures`, { method: 'POST', key: other, json: { signatures: [{ index: 1, signature: creator.sign(message) }] } })).status).toBe(404);
    const serviceSigned = await t.createLaunch(key, launchBody());
    expect((await t.request(`/api/launches/${serviceSigned}/signing`, { key })).status).toBe(404);
  });

  it('refuses a setup signed after its blockhash expired with 409 setup_expired, storing and sending nothing', async () => {
    const clock = manualClock(Date.now());
    t = await startTestService({ clock });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(SOL));
    const id = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const offered = (await signingOf(t, key, id)).transactions[0]!;
    const rows = () => t!.service.db.selectFrom('launch_signing_txs').selectAll().where('launch_id', '=', id).orderBy('idx').execute();
    const before = await rows();

    clock.advance(61_000); // past the setup's blockhash (150 blocks)
    const late = await t.request(`/api/launches/${id}/signatures`, { method: 'POST', key, json: { signatures: [{ index: offered.index, signature: creator.sign(Buffer.from(offered.message, 'base64')) }] } });
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { code: string; details: unknown } }).error).toMatchObject({ code: 'setup_expired', details: { index: offered.index } });
    expect(await rows()).toEqual(before);
    expect(await t.service.chain.getBalance(new PublicKey(creator.address))).toBe(SOL);

    // The fresh setup the loop offers in its place takes the creator's signature.
    expect(await t.service.signing.advanceSetups()).toBe(1);
    expect((await signAll(t, key, id, creator)).body.signing!.transactions.map((tx) => tx.step)).toEqual(['setup', 'create_mint', 'distribute_supply', 'close_nonces']);
  });

  it('fails an unsigned launch with signature_timeout at SIGNING_DEADLINE, nothing sent, and then takes no signatures', async () => {
    const clock = manualClock(Date.now());
    t = await startTestService({ clock, env: { SIGNING_DEADLINE: '10m' } });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(SOL));
    const id = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const view = await signingOf(t, key, id);
    expect(await t.service.runner.drain()).toBe(0);
    clock.advance(10 * 60_000);
    expect(await t.service.runner.drain()).toBe(1);

    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: { status: string; error: { code: string; step: string } } }).launch;
    expect(launch).toMatchObject({ status: 'failed', error: { code: 'signature_timeout', step: 'signing' } });
    expect((await signingOf(t, key, id)).status).toBe('expired');
    const late = await t.request(`/api/launches/${id}/signatures`, { method: 'POST', key, json: { signatures: [{ index: 0, signature: creator.sign(Buffer.from(view.transactions[0]!.message, 'base64')) }] } });
    expect(late.status).toBe(409);
    expect(await t.service.chain.getBalance(new PublicKey(creator.address))).toBe(SOL);
    const events = ((await (await t.request(`/api/launches/${id}/events`, { key })).json()) as { events: Array<{ event: string; payload: { data: Record<string, unknown> } }> }).events;
    expect(events.map((e) => e.event)).toEqual(['launch.awaiting_signatures', 'launch.failed']);
    expect(events[0]!.payload.data).toEqual({ count: 1, expiresAt: view.expiresAt });
    const deadLetters = await t.service.db.selectFrom('dead_letters').selectAll().execute();
    expect(deadLetters).toEqual([]);
  });
});
