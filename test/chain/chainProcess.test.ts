import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, getAssociatedTokenAddressSync, getMint } from '@solana/spl-token';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { startChainProcess } from './support/chainProcess.js';

// `npm run chain` standalone, with the service's RPC backend launching on it (docs/chain.md, docs/architecture.md).
describe('npm run chain', () => {
  const dir = mkdtempSync(join(tmpdir(), 'chain-proc-'));
  let chain: Awaited<ReturnType<typeof startChainProcess>>;
  let t: TestService;
  const payer = Keypair.generate();

  beforeAll(async () => {
    chain = await startChainProcess({ DATA_DIR: dir });
    const payerPath = join(dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    const connection = new Connection(chain.url, 'confirmed');
    const signature = await connection.requestAirdrop(payer.publicKey, 20 * LAMPORTS_PER_SOL);
    expect((await connection.getSignatureStatus(signature)).value?.err).toBeNull();
    t = await startTestService({ env: { SOLANA_RPC_URL: chain.url, SOLANA_PAYER_KEYPAIR: payerPath } });
  }, 30_000);
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a chain the RPC backend launches on, and keeps it across a restart of the chain process', async () => {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const creator = Keypair.generate().publicKey.toBase58();
    const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ totalSupply: '4200', decimals: 3, creator }) });
    expect(res.status).toBe(202);
    const { launch } = (await res.json()) as { launch: { id: string } };
    for (let pass = 0; pass < 20; pass++) {
      await t.service.runner.drain();
      const row = await t.service.db.selectFrom('launches').select('status').where('id', '=', launch.id).executeTakeFirstOrThrow();
      if (row.status === 'complete' || row.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 300));
    }
    const got = ((await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as { launch: { status: string; results: { mint: string } } }).launch;
    expect(got.status).toBe('complete');

    await chain.stop();
    chain = await startChainProcess({ DATA_DIR: dir });
    const connection = new Connection(chain.url, 'confirmed');
    const mint = await getMint(connection, new PublicKey(got.results.mint), 'confirmed', TOKEN_2022_PROGRAM_ID);
    expect(mint.supply).toBe(4_200_000n);
    const ata = getAssociatedTokenAddressSync(mint.address, new PublicKey(creator), false, TOKEN_2022_PROGRAM_ID);
    expect((await connection.getTokenAccountBalance(ata)).value.amount).toBe('4200000');
    expect((await connection.getSignaturesForAddress(mint.address)).length).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
