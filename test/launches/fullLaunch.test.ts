import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { checkEnvelope } from '../../src/webhooks/eventSchemas.js';
import { ataBalance, readMintBack } from '../chain/support/readBack.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

// Needs the real program binaries (see README: CHAIN_PROGRAMS_DIR); skipped cleanly without them.
const dir = process.env.CHAIN_PROGRAMS_DIR;
const ids = Object.values(DEFAULT_PROGRAM_IDS);
const missing = dir === undefined ? ids : ids.filter((id) => !existsSync(join(dir, `${id}.so`)));
const reason = dir === undefined ? 'CHAIN_PROGRAMS_DIR is unset' : `missing ${missing.map((id) => `${id}.so`).join(', ')}`;

describe.skipIf(missing.length > 0)(`full spl-token launch with vesting, DAO and pool through the API (${missing.length > 0 ? `skipped: ${reason}` : 'binaries present'})`, () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: dir ?? '' } });
  });
  afterAll(async () => t?.close());

  it('completes every step and launch.complete carries every address and transaction type', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey.toBase58();
    const body = launchBody({
      tokenStandard: 'spl-token',
      creator,
      totalSupply: '1000000000',
      decimals: 9,
      allocations: { creator: 20, vesting: 15, treasury: 35, pool: 30 },
      vesting: { beneficiary: Keypair.generate().publicKey.toBase58(), cliffSeconds: 2592000, periodSeconds: 86400, periods: 365 },
      dao: { name: `Demo DAO ${Date.now()}`, votingPeriodSeconds: 259200, quorumPercent: 10 },
      pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '5' },
      revokeMintAuthority: true,
    });
    const res = await t.request('/api/launches', { method: 'POST', key, json: body });
    expect(res.status).toBe(202);
    const { launch } = (await res.json()) as { launch: { id: string } };
    await t.service.runner.drain();
    const got = ((await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as any).launch;
    expect(got.error).toBeNull();
    expect(got.status).toBe('complete');
    // Completing the launch created its watches in the same transaction (docs/watcher.md).
    expect(got.watches.map((w: any) => [w.kind, w.address, w.state])).toEqual([
      ['dao', got.results.dao.realm, 'active'],
      ['pool', got.results.pool.address, 'active'],
      ['vesting', got.results.vestingContract, 'active'],
    ]);
    expect(got.watches.find((w: any) => w.kind === 'vesting').cliffAt).not.toBeNull();
    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launch.id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual([
      'launch.queued', 'launch.processing',
      'launch.step_complete', 'launch.step_complete', 'launch.step_complete',
      'launch.step_complete', 'vesting.created',
      'launch.step_complete', 'dao.created',
      'launch.step_complete', 'launch.complete',
    ]);
    // Every payload matches its documented schema (OpenAPI webhooks section).
    for (const e of events) expect(checkEnvelope(JSON.parse(e.body)), e.event).toEqual({ ok: true });
    const data = JSON.parse(events.at(-1)!.body).data;
    for (const field of ['mint', 'metadata', 'vestingContract']) expect(data[field]).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(data.dao.realm).toBeTruthy();
    expect(data.dao.treasury).toBeTruthy();
    expect(data.pool.address).toBeTruthy();
    expect(data.pool.lpMint).toBeTruthy();
    expect(new Set(data.transactions.map((tx: any) => tx.type)).size).toBeGreaterThanOrEqual(5);

    const { mint } = await readMintBack(t.service.chain, data.mint);
    expect(mint.supply).toBe(1_000_000_000n * 10n ** 9n);
    expect(mint.mintAuthority).toBeNull();
    expect(await ataBalance(t.service.chain, data.mint, creator, TOKEN_PROGRAM_ID)).toBe(200_000_000n * 10n ** 9n);
    expect((await readMintBack(t.service.chain, data.pool.lpMint)).mint.supply > 0n).toBe(true);
  });
});
