import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, PublicKey } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import type { ServerType } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { signLaunch } from '../../scripts/holder.js';
import { decodeVestingEscrow } from '../../src/chain/programs/jupiterLock/escrowAccount.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { creatorWallet, signAll } from './support/creator.js';

let t: TestService | undefined;
let server: ServerType | undefined;
afterEach(async () => {
  if (server) await new Promise((resolve) => server!.close(resolve));
  await t?.close();
  t = undefined;
  server = undefined;
});

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;

describe('npm run holder -- sign', () => {
  it('signs every round of a creator-signed launch with the creator’s keypair file, and the launch completes', async () => {
    t = await startTestService();
    const key = await t.key('acme', [...WRITE]);
    const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
    server = listening.server;
    const creator = Keypair.generate();
    await t.service.chain.requestAirdrop!(creator.publicKey, BigInt(SOL));
    const id = await t.createLaunch(key, launchBody({ creator: creator.publicKey.toBase58(), signing: 'creator' }));
    const lines: string[] = [];
    const request = await signLaunch(`http://127.0.0.1:${listening.port}`, key, id, creator, (line) => lines.push(line));
    expect(request.status).toBe('signed');
    expect(lines).toEqual(['signed 0 setup', 'signed 1 create_mint', 'signed 2 distribute_supply', 'signed 3 close_nonces']);
    expect(await t.service.runner.drain()).toBe(1);
    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: { status: string } }).launch;
    expect(launch.status).toBe('complete');
  });
});

// Needs the Metaplex and Jupiter Lock binaries (README: CHAIN_PROGRAMS_DIR); skipped cleanly without
// them. The full launch (DAO and pool too) is in creatorFull.test.ts.
const dir = process.env.CHAIN_PROGRAMS_DIR;
const needed = ['metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s', 'LocpQgucEQHbqNABEYvBvwoxCPsSbG91A1QaQhQQqjn'];
const missing = dir === undefined ? needed : needed.filter((id) => !existsSync(join(dir, `${id}.so`)));

describe.skipIf(missing.length > 0)(`a creator-signed spl-token launch with Metaplex metadata and Jupiter Lock vesting (${missing.length > 0 ? `skipped: missing ${missing.join(', ')}` : 'binaries present'})`, () => {
  it('lands every step the creator signed: metadata, supply, the vesting escrow for the beneficiary, the rent back', async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: dir ?? '' } });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    const beneficiary = Keypair.generate().publicKey.toBase58();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(2 * SOL));
    const funding = ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding;
    const fundingBefore = await t.service.chain.getBalance(new PublicKey(funding.address));
    const payerBefore = await t.service.chain.getBalance(t.service.chain.payer.publicKey);
    const body = launchBody({
      creator: creator.address,
      signing: 'creator',
      tokenStandard: 'spl-token',
      allocations: { creator: 80, vesting: 20 },
      vesting: { beneficiary, cliffSeconds: 60, periodSeconds: 60, periods: 2, cliffUnlockPercent: 10 },
    });
    const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', key, json: body })).json()) as { quote: { totalLamports: string; accounts: Array<{ rentLamports: string; returned?: true }> } }).quote;
    const id = await t.createLaunch(key, body);
    expect((await signAll(t, key, id, creator)).body.signing!.transactions.map((tx) => tx.step)).toEqual(['setup', 'create_mint', 'create_metadata', 'distribute_supply', 'create_vesting', 'close_nonces']);
    expect((await signAll(t, key, id, creator)).body.signing!.status).toBe('signed');
    expect(await t.service.runner.drain()).toBe(1);

    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: { status: string; error: unknown; results: { mint: string; metadata: string; vesting: { escrow: string; recipient: string; amount: string } } } }).launch;
    expect(launch.error).toBeNull();
    expect(launch.status).toBe('complete');
    expect((await t.service.chain.getAccountInfo(new PublicKey(launch.results.mint)))?.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    expect(await t.service.chain.getAccountInfo(new PublicKey(launch.results.metadata))).not.toBeNull();
    expect(launch.results.vesting).toMatchObject({ recipient: beneficiary, amount: String(200_000n * 10n ** 6n) });
    // cliffUnlockPercent 10 in the escrow the creator signed: 20 000 tokens at the cliff, 90 000 in each of the two periods.
    const escrow = decodeVestingEscrow((await t.service.chain.getAccountInfo(new PublicKey(launch.results.vesting.escrow)))!.data);
    expect([escrow.cliffUnlockAmount, escrow.amountPerPeriod, escrow.numberOfPeriod]).toEqual([20_000n * 10n ** 6n, 90_000n * 10n ** 6n, 2n]);
    expect(await t.service.chain.getBalance(new PublicKey(funding.address))).toBe(fundingBefore);
    expect(await t.service.chain.getBalance(t.service.chain.payer.publicKey)).toBe(payerBefore);
    const returned = quote.accounts.filter((a) => a.returned).reduce((n, a) => n + Number(a.rentLamports), 0);
    expect(2 * SOL - (await t.service.chain.getBalance(new PublicKey(creator.address)))).toBe(Number(quote.totalLamports) - returned);
  });
});
