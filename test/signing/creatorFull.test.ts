import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { afterEach, describe, expect, it } from 'vitest';
import { CPMM_MAINNET_PROGRAM_ID, JUPITER_LOCK_PROGRAM_ID, SPL_GOVERNANCE_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { creatorWallet, signAll } from './support/creator.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;
const METADATA = 'metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s';
const NEEDED = [METADATA, JUPITER_LOCK_PROGRAM_ID.toBase58(), SPL_GOVERNANCE_PROGRAM_ID.toBase58(), CPMM_MAINNET_PROGRAM_ID.toBase58()];

/** The token balance of an spl-token account (amount at bytes 64..72), 0 when there is none. */
async function tokenAmount(address: PublicKey): Promise<bigint> {
  const info = await t!.service.chain.getAccountInfo(address);
  return info ? info.data.readBigUInt64LE(64) : 0n;
}

interface FullLaunch {
  status: string;
  error: unknown;
  results: {
    mint: string;
    vesting: { escrow: string; recipient: string; amount: string };
    dao: { realm: string; governance: string; treasury: string; treasuryTokenAccount: string; treasuryAmount: string };
    pool: { address: string; lpRecipient: string; lpTokenAccount: string; lpAmount: string; quoteLamports: string; token0Vault: string; token1Vault: string };
  };
  steps: Array<{ name: string; transactions: Array<{ type: string; signature: string }> }>;
}

// Needs the Metaplex, Jupiter Lock, SPL Governance and Raydium CPMM binaries (README:
// CHAIN_PROGRAMS_DIR); skipped cleanly without them. The creator's key is made and used with
// node:crypto alone (support/creator.ts), none of the service's code.
describe.skipIf(!haveBinaries(...NEEDED))(`a full creator-signed spl-token launch${needs(...NEEDED)}`, () => {
  it('lands vesting, the DAO and the pool the creator signed; the owner’s wallet and the service payer untouched, the creator paid about its quote', async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '' } });
    const key = await t.key('acme', [...WRITE]);
    const creator = creatorWallet();
    const beneficiary = creatorWallet().address;
    const start = 5n * BigInt(SOL);
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), start);
    const funding = ((await (await t.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding;
    const fundingBefore = await t.service.chain.getBalance(new PublicKey(funding.address));
    const payerBefore = await t.service.chain.getBalance(t.service.chain.payer.publicKey);
    const body = launchBody({
      creator: creator.address,
      signing: 'creator',
      tokenStandard: 'spl-token',
      allocations: { creator: 40, vesting: 20, treasury: 15, pool: 25 },
      vesting: { beneficiary, cliffSeconds: 60, periodSeconds: 60, periods: 2 },
      dao: { name: `Creator DAO ${Math.random().toString(36).slice(2, 8)}`, votingPeriodSeconds: 3600, quorumPercent: 10 },
      pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '1.5' },
    });
    const quoteRes = await t.request('/api/launches/quote', { method: 'POST', key, json: body });
    expect(quoteRes.status).toBe(200);
    const quote = ((await quoteRes.json()) as { quote: { totalLamports: string; sufficient: boolean; accounts: Array<{ rentLamports: string; returned?: true }> } }).quote;
    expect(quote.sufficient).toBe(true);

    const id = await t.createLaunch(key, body);
    const first = await signAll(t, key, id, creator);
    expect(first.status).toBe(200);
    expect(first.body.signing!.transactions.map((tx) => tx.step)).toEqual(['setup', 'setup', 'create_mint', 'create_metadata', 'distribute_supply', 'create_vesting', 'create_dao', 'create_pool', 'close_nonces']);
    const second = await signAll(t, key, id, creator);
    expect(second.body.signing!.status).toBe('signed');
    expect(await t.service.runner.drain()).toBe(1);

    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: FullLaunch }).launch;
    expect(launch.error).toBeNull();
    expect(launch.status).toBe('complete');
    const chain = t.service.chain;
    const mint = new PublicKey(launch.results.mint);
    expect((await chain.getAccountInfo(mint))?.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    const base = 10n ** 6n;
    // Vesting: the escrow holds 20 % for the beneficiary.
    expect(launch.results.vesting).toMatchObject({ recipient: beneficiary, amount: String(200_000n * base) });
    // DAO: the realm is on chain under SPL Governance, its treasury holds 15 %.
    expect((await chain.getAccountInfo(new PublicKey(launch.results.dao.realm)))?.owner.equals(SPL_GOVERNANCE_PROGRAM_ID)).toBe(true);
    expect(await tokenAmount(new PublicKey(launch.results.dao.treasuryTokenAccount))).toBe(150_000n * base);
    // Pool: the CPMM pool holds 25 % and 1.5 SOL, its LP tokens are the creator's.
    expect((await chain.getAccountInfo(new PublicKey(launch.results.pool.address)))?.owner.equals(CPMM_MAINNET_PROGRAM_ID)).toBe(true);
    expect(launch.results.pool.lpRecipient).toBe(creator.address);
    expect(await tokenAmount(new PublicKey(launch.results.pool.lpTokenAccount))).toBe(BigInt(launch.results.pool.lpAmount));
    expect(BigInt(launch.results.pool.quoteLamports)).toBe(1_500_000_000n);
    // The creator keeps its 40 % (the treasury's and the pool's shares left its account).
    expect(await tokenAmount(getAssociatedTokenAddressSync(mint, new PublicKey(creator.address), true, TOKEN_PROGRAM_ID))).toBe(400_000n * base);
    expect(launch.steps.flatMap((step) => step.transactions.map((tx) => tx.type))).toEqual(expect.arrayContaining(['dao', 'pool', 'nonce_rent']));

    // Nobody but the creator paid, to the lamport; the creator paid about the quote.
    expect(await chain.getBalance(new PublicKey(funding.address))).toBe(fundingBefore);
    expect(await chain.getBalance(chain.payer.publicKey)).toBe(payerBefore);
    const returned = quote.accounts.filter((a) => a.returned).reduce((n, a) => n + Number(a.rentLamports), 0);
    const paid = Number(start - BigInt(await chain.getBalance(new PublicKey(creator.address))));
    const quoted = Number(quote.totalLamports) - returned;
    console.log(`full creator-signed launch: quoted ${quoted} lamports (less the returned nonce rent), the creator paid ${paid}`);
    expect(Math.abs(paid - quoted) / quoted).toBeLessThan(0.1);
  });
});
