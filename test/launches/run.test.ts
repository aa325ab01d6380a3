import { PublicKey } from '@solana/web3.js';
import { getAccount, getAssociatedTokenAddressSync, getMint, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { afterEach, describe, expect, it } from 'vitest';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function account(svc: TestService, address: string) {
  const info = await svc.service.chain.getAccountInfo(new PublicKey(address));
  if (!info) throw new Error(`account ${address} missing`);
  return info;
}

describe('launch runner on the embedded chain', () => {
  it('runs a token-2022 launch to complete, emitting queued → processing → each step → complete in sequence', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const body = launchBody({ totalSupply: '1000000', decimals: 6, revokeMintAuthority: true });
    const res = await t.request('/api/launches', { method: 'POST', key, json: body });
    const { launch } = (await res.json()) as { launch: { id: string } };
    expect(await t.service.runner.drain()).toBe(1);

    const got = (await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as { launch: Record<string, any> };
    expect(got.launch.status).toBe('complete');
    expect(got.launch.steps.map((s: any) => s.status)).toEqual(['complete', 'complete', 'complete']);
    expect(got.launch.steps[0].transactions[0].signature).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    const mint = got.launch.results.mint as string;

    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'sequence', 'body']).where('launch_id', '=', launch.id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual([
      'launch.queued',
      'launch.processing',
      'launch.step_complete',
      'launch.step_complete',
      'launch.step_complete',
      'launch.complete',
    ]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    const complete = JSON.parse(events[5]!.body) as { data: Record<string, any> };
    expect(complete.data.mint).toBe(mint);
    expect(complete.data.metadata).toBe(mint);
    expect(complete.data.transactions.length).toBeGreaterThanOrEqual(2);
    expect(Object.keys(complete.data).sort()).toEqual(['dao', 'metadata', 'mint', 'pool', 'transactions', 'vestingContract']);

    // Read the chain back: token-2022 mint, full supply with the creator, authority revoked.
    const mintInfo = await account(t, mint);
    expect(mintInfo.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    const connectionLike = { getAccountInfo: (pk: PublicKey) => t!.service.chain.getAccountInfo(pk) } as any;
    const decoded = await getMint(connectionLike, new PublicKey(mint), 'confirmed', TOKEN_2022_PROGRAM_ID);
    expect(decoded.supply).toBe(1_000_000n * 10n ** 6n);
    expect(decoded.decimals).toBe(6);
    expect(decoded.mintAuthority).toBeNull();
    const ata = getAssociatedTokenAddressSync(new PublicKey(mint), new PublicKey(body.creator as string), false, TOKEN_2022_PROGRAM_ID);
    const holder = await getAccount(connectionLike, ata, 'confirmed', TOKEN_2022_PROGRAM_ID);
    expect(holder.amount).toBe(1_000_000n * 10n ** 6n);
  });
});
