import { Keypair, PublicKey, SYSVAR_CLOCK_PUBKEY } from '@solana/web3.js';
import { afterEach, describe, expect, it } from 'vitest';
import { deriveLaunchKeys } from '../../src/chain/keys.js';
import { launchKeySecret } from '../../src/launches/chainStepRunner.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const SOL = 1_000_000_000;

interface Entry { kind: string; lamports: string; feeLamports: string | null; launchId: string | null; signature: string | null }

describe('the funding ledger adds up to what left the wallet on chain', () => {
  it('over launches, a launch whose transaction failed on chain, withdrawals and a refused withdrawal, fees included', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:write', 'launches:read', 'funds:withdraw']);
    const wallet = ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding.address;
    const chain = t.service.chain;
    const balanceOf = (address: PublicKey | string) => chain.getBalance(typeof address === 'string' ? new PublicKey(address) : address);
    const start = await balanceOf(wallet);

    // Two launches that complete.
    await t.createLaunch(key);
    await t.createLaunch(key);
    expect(await t.service.runner.drain()).toBe(2);

    // A launch whose first transaction lands and fails: its mint's address already holds lamports,
    // so creating the account there fails on chain, and the wallet pays the fee anyway.
    const failing = await t.createLaunch(key);
    const mint = deriveLaunchKeys(launchKeySecret(t.config.secretKey), failing).mint.publicKey;
    await chain.requestAirdrop!(mint, 1_000_000n);
    await t.service.runner.drain();
    const failed = (await (await t.request(`/api/launches/${failing}`, { key })).json()) as { launch: { status: string; error: { code: string } } };
    expect(failed.launch.status).toBe('failed');
    expect(failed.launch.error.code).toBe('program_error');

    // Two withdrawals, and one to a sysvar refused before signing.
    for (const [i, lamports] of [SOL, 3 * SOL].entries()) {
      const res = await t.request('/api/funding/withdraw', { method: 'POST', key, json: { to: Keypair.generate().publicKey.toBase58(), lamports: String(lamports) }, headers: { 'idempotency-key': `w-${i}` } });
      expect(res.status).toBe(200);
    }
    const refused = await t.request('/api/funding/withdraw', { method: 'POST', key, json: { to: SYSVAR_CLOCK_PUBKEY.toBase58(), lamports: String(SOL) }, headers: { 'idempotency-key': 'w-sysvar' } });
    expect(refused.status).toBe(400);

    const ledger = ((await (await t.request('/api/funding/ledger?limit=100', { key })).json()) as { entries: Entry[] }).entries;
    // The failed launch's fee is an entry of its own, with its transaction's signature.
    const failedSpends = ledger.filter((e) => e.launchId === failing && e.kind === 'spend');
    expect(failedSpends).toHaveLength(1);
    expect(failedSpends[0]!.signature).not.toBeNull();
    expect(BigInt(failedSpends[0]!.lamports)).toBeGreaterThan(0n);
    // What left: each spend, each withdrawal with its fee, each failed withdrawal's fee; reservations and releases move nothing.
    const out = ledger.reduce((n, e) => (['spend', 'withdraw', 'fee'].includes(e.kind) ? n + BigInt(e.lamports) + BigInt(e.feeLamports ?? 0) : n), 0n);
    expect(out).toBe(BigInt(start - (await balanceOf(wallet))));
  });
});
