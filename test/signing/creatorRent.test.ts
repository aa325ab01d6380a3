import { NONCE_ACCOUNT_LENGTH, PublicKey, SystemProgram, Transaction, VersionedMessage } from '@solana/web3.js';
import bs58 from 'bs58';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { creatorWallet, signAll, signingOf, type CreatorWallet, type SigningView } from './support/creator.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;
const balance = (address: string | PublicKey) => t!.service.chain.getBalance(new PublicKey(address));

/** The durable nonce account a launch transaction advances (its first instruction's first account), read from the message the creator signs. */
function nonceAccountOf(message: string): string {
  const parsed = VersionedMessage.deserialize(Buffer.from(message, 'base64'));
  return parsed.staticAccountKeys[parsed.compiledInstructions[0]!.accountKeyIndexes[0]!]!.toBase58();
}

/** What a landed transaction took from (negative) or gave to its fee payer, from the chain's history. */
async function payerDelta(signature: string): Promise<number> {
  const tx = await t!.service.chain.history.getTransaction(signature);
  if (!tx) throw new Error(`transaction ${signature} is not in the chain's history`);
  return Number(tx.postBalances[0]! - tx.preBalances[0]!);
}

async function post(key: string, id: string, signatures: Array<{ index: number; signature: string }>) {
  const res = await t!.request(`/api/launches/${id}/signatures`, { method: 'POST', key, json: { signatures } });
  return { status: res.status, body: (await res.json()) as { signing?: SigningView; error?: { code: string; details?: { fields?: Array<{ field: string }> } } } };
}

const signOf = (wallet: CreatorWallet, view: SigningView, step: string) => {
  const tx = view.transactions.find((x) => x.step === step)!;
  return { index: tx.index, signature: wallet.sign(Buffer.from(tx.message, 'base64')) };
};

// The nonce accounts' rent comes back through close_nonces, signed up front, when a launch fails or
// times out after its setup landed, not only when it completes (docs/signing.md). Balances are read
// from the embedded chain; the creator's key is node:crypto's (support/creator.ts).
describe('the nonce accounts’ rent after a creator-signed launch ends badly', () => {
  it('comes back before a launch fails at a step that can no longer land', async () => {
    t = await startTestService();
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(2 * SOL));
    const id = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    await signAll(t, key, id, creator);
    const view = await signingOf(t, key, id);
    expect((await signAll(t, key, id, creator)).body.signing!.status).toBe('signed');
    const launchTxs = view.transactions.filter((tx) => tx.step !== 'setup');
    const nonces = launchTxs.map((tx) => nonceAccountOf(tx.message));
    const closeNonce = nonceAccountOf(view.transactions.find((tx) => tx.step === 'close_nonces')!.message);
    const rent = await t.service.chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    for (const nonce of nonces) expect(await balance(nonce)).toBe(rent);

    // The creator uses distribute_supply's nonce elsewhere (its own wallet, web3.js and node:crypto):
    // that signed transaction can never land.
    const supply = view.transactions.find((tx) => tx.step === 'distribute_supply')!.message;
    const used = nonceAccountOf(supply);
    const nonce = VersionedMessage.deserialize(Buffer.from(supply, 'base64')).recentBlockhash;
    const advance = new Transaction({ feePayer: new PublicKey(creator.address), nonceInfo: { nonce, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: new PublicKey(used), authorizedPubkey: new PublicKey(creator.address) }) } });
    advance.add(SystemProgram.transfer({ fromPubkey: new PublicKey(creator.address), toPubkey: new PublicKey(creator.address), lamports: 0 }));
    advance.addSignature(new PublicKey(creator.address), Buffer.from(bs58.decode(creator.sign(advance.serializeMessage()))));
    const advanced = await t.service.chain.sendRawTransaction(advance.serialize());
    await t.service.chain.confirmTransaction(advanced, (await t.service.chain.getBlockHeight()) + 150, 'confirmed');

    const before = await balance(creator.address);
    expect(await t.service.runner.drain()).toBe(1);
    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: { status: string; error: { code: string; step: string }; steps: Array<{ name: string; transactions: Array<{ signature: string }> }> } }).launch;
    expect(launch).toMatchObject({ status: 'failed', error: { code: 'transaction_unlandable', step: 'distribute_supply' } });

    // Every nonce account but close_nonces' own is gone, its rent the creator's again.
    for (const nonce of nonces) expect(await balance(nonce)).toBe(nonce === closeNonce ? rent : 0);
    const close = signOf(creator, view, 'close_nonces').signature; // the fee payer's signature is the transaction's
    const returned = await payerDelta(close);
    expect(returned).toBeGreaterThan((nonces.length - 1) * rent - 20_000);
    const mintTx = launch.steps.find((s) => s.name === 'create_mint')!.transactions[0]!.signature;
    expect((await balance(creator.address)) - before).toBe((await payerDelta(mintTx)) + returned);

    // Its dead letter cannot be retried: every signed transaction left needs a nonce account that is
    // gone. 409 nonce_rent_returned, and nothing changes (the launch failed, the dead letter open).
    const admin = await t.key('ops', ['admin']);
    const deadLetters = await t.service.db.selectFrom('dead_letters').selectAll().where('launch_id', '=', id).execute();
    expect(deadLetters.map((d) => [d.kind, d.status])).toEqual([['launch', 'open']]);
    const events = async () => (await t!.service.db.selectFrom('outbox_events').select('event').where('launch_id', '=', id).execute()).map((e) => e.event);
    const eventsBefore = await events();
    const retry = await t.request(`/api/dead-letters/${deadLetters[0]!.id}/retry`, { method: 'POST', key: admin });
    expect(retry.status).toBe(409);
    expect(((await retry.json()) as { error: { code: string; details: unknown } }).error).toMatchObject({ code: 'nonce_rent_returned', details: { launchId: id, closeNonces: close } });
    expect((await t.service.db.selectFrom('dead_letters').select('status').where('launch_id', '=', id).execute()).map((d) => d.status)).toEqual(['open']);
    expect((await t.service.db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status).toBe('failed');
    expect(await events()).toEqual(eventsBefore);
    expect(await t.service.runner.drain()).toBe(0);
  });

  it('comes back when the launch times out after its setup landed, and close_nonces is signed first', async () => {
    const clock = manualClock(Date.now());
    t = await startTestService({ clock, env: { SIGNING_DEADLINE: '10m' } });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    const start = 2 * SOL;
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(start));
    const id = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const setups = (await signingOf(t, key, id)).transactions.filter((tx) => tx.step === 'setup').map((tx) => creator.sign(Buffer.from(tx.message, 'base64')));
    await signAll(t, key, id, creator);
    const view = await signingOf(t, key, id);
    expect(view.transactions.map((tx) => tx.step)).toEqual(['setup', 'create_mint', 'distribute_supply', 'close_nonces']);

    // A launch transaction without close_nonces is refused, nothing stored.
    const early = await post(key, id, [signOf(creator, view, 'create_mint')]);
    expect(early.status).toBe(400);
    expect(early.body.error?.details?.fields?.map((f) => f.field)).toEqual(['signatures']);
    expect((await signingOf(t, key, id)).transactions.filter((tx) => tx.signed).map((tx) => tx.step)).toEqual(['setup']);
    // The creator signs the rent return only, and walks away.
    expect((await post(key, id, [signOf(creator, view, 'close_nonces')])).status).toBe(200);

    clock.advance(10 * 60_000);
    expect(await t.service.runner.drain()).toBe(1);
    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: { status: string; error: { code: string } } }).launch;
    expect(launch).toMatchObject({ status: 'failed', error: { code: 'signature_timeout' } });

    const rent = await t.service.chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    const nonces = view.transactions.filter((tx) => tx.step !== 'setup').map((tx) => nonceAccountOf(tx.message));
    const closeNonce = nonceAccountOf(view.transactions.find((tx) => tx.step === 'close_nonces')!.message);
    for (const nonce of nonces) expect(await balance(nonce)).toBe(nonce === closeNonce ? rent : 0);
    // The creator is out the setups' and the rent return's fees and the one nonce account left, nothing else.
    const close = signOf(creator, view, 'close_nonces').signature;
    const fees = -(await payerDelta(close)) + (nonces.length - 1) * rent - (await Promise.all(setups.map(payerDelta))).reduce((n, d) => n + d, 0) - nonces.length * rent;
    expect(fees).toBeGreaterThan(0);
    expect(fees).toBeLessThan(50_000);
    expect(await balance(creator.address)).toBe(start - fees - rent);
  });
});
