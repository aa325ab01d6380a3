import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChainProcess } from '../chain/support/chainProcess.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

// docs/funding.md: two service instances on one PostgreSQL database and one chain (`npm run chain`)
// reserve from one owner's wallet. PostgreSQL only: SQLite is one process per data directory.
if (!onPostgres) console.log('funding/instances.test.ts: skipped, no TEST_DATABASE_URL (PostgreSQL) set');

/** Waits for an airdrop by polling its status (the test does not depend on the chain's PubSub). */
async function airdrop(connection: Connection, to: PublicKey, lamports: number): Promise<void> {
  const signature = await connection.requestAirdrop(to, lamports);
  for (let i = 0; i < 300; i++) {
    const { value } = await connection.getSignatureStatuses([signature]);
    if (value[0]?.confirmationStatus === 'confirmed' || value[0]?.confirmationStatus === 'finalized') return;
    await new Promise((r) => setTimeout(r, 100)); // another process's chain: nothing to wait on but its answers
  }
  throw new Error(`airdrop ${signature} not confirmed`);
}

describe.skipIf(!onPostgres)('one owner’s wallet, two instances', () => {
  const dir = mkdtempSync(join(tmpdir(), 'funding-instances-'));
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let chain: Awaited<ReturnType<typeof startChainProcess>>;
  let connection: Connection;
  const instances: TestService[] = [];

  beforeAll(async () => {
    database = await createPostgresDatabase();
    chain = await startChainProcess({ DATA_DIR: join(dir, 'chain') });
    connection = new Connection(chain.url, 'confirmed');
    const payer = Keypair.generate();
    writeFileSync(join(dir, 'payer.json'), JSON.stringify([...payer.secretKey]));
    await airdrop(connection, payer.publicKey, 10 * LAMPORTS_PER_SOL);
    const env = {
      DATABASE_URL: database.url,
      SOLANA_RPC_URL: chain.url,
      SOLANA_PAYER_KEYPAIR: join(dir, 'payer.json'),
      SECRET_KEY: randomBytes(32).toString('base64'),
      FUNDING_DEV_AIRDROP: '0.02',
    };
    for (let i = 0; i < 2; i++) instances.push(await startTestService({ env: { ...env, DATA_DIR: join(dir, `i${i}`) } }));
  }, 60_000);

  afterAll(async () => {
    for (const t of instances) await t.close();
    await chain?.stop();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives an owner one wallet, funded before either instance can see it, however its first requests race', async () => {
    const keys = await Promise.all(instances.map((t) => t.key('racer', ['launches:read'])));
    const answers = await Promise.all(instances.flatMap((t, i) => [0, 1, 2].map(() => t.request('/api/funding', { key: keys[i] }))));
    const wallets = (await Promise.all(answers.map((r) => r.json()))) as Array<{ funding: { address: string; balanceLamports: string } }>;
    expect(new Set(wallets.map((w) => w.funding.address)).size).toBe(1);
    expect(new Set(wallets.map((w) => w.funding.balanceLamports))).toEqual(new Set([String(LAMPORTS_PER_SOL / 50)]));
  });

  it('never reserves more than the wallet holds under 40 concurrent creates through both instances', async () => {
    const [a, b] = instances as [TestService, TestService];
    const key = await a.key('acme', ['launches:write', 'launches:read']);
    const { funding } = (await (await a.request('/api/funding', { key })).json()) as { funding: { address: string; balanceLamports: string } };
    const total = Number(((await (await a.request('/api/launches/quote', { method: 'POST', key, json: launchBody() })).json()) as { quote: { totalLamports: string } }).quote.totalLamports);
    // Top the wallet up to 7.5 launches' worth.
    const topUp = 7 * total + Math.floor(total / 2) - Number(funding.balanceLamports);
    expect(topUp).toBeGreaterThan(0);
    await airdrop(connection, new PublicKey(funding.address), topUp);

    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).request('/api/launches', { method: 'POST', key, json: launchBody() })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(7);
    expect(statuses.filter((s) => s === 402)).toHaveLength(33);
    const reserves = await a.service.db.selectFrom('funding_ledger').select('lamports').where('owner', '=', 'acme').where('kind', '=', 'reserve').execute();
    expect(reserves.reduce((n, r) => n + Number(r.lamports), 0)).toBe(7 * total);
  });
});
