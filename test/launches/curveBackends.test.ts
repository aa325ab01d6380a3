import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { DynamicBondingCurveClient } from '@meteora-ag/dynamic-bonding-curve-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainBackend } from '../../src/chain/backend.js';
import { createChainBackend } from '../../src/app/serviceChain.js';
import type { EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { curveKit } from '../../src/chain/programs/dbc/curve.js';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { readMintBack } from '../chain/support/readBack.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { testConfig } from '../support/config.js';
import { onPostgres } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

// A bonding-curve launch on the two chain backends bondingCurve.test.ts does not use: the chain
// thread (CHAIN_THREAD=on) and a cluster over JSON-RPC (`npm run chain`'s server in front of an
// embedded chain). Needs the DBC and DAMM v2 binaries in CHAIN_PROGRAMS_DIR (docs/programs.md);
// skipped cleanly without them.
const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];
const WSOL = 'So11111111111111111111111111111111111111112';

const curveBody = (creator: string) =>
  launchBody({
    creator,
    totalSupply: '1000000000',
    decimals: 9,
    allocations: { pool: 100 },
    pool: { kind: 'bonding-curve', quoteMint: WSOL, initialMarketCap: '30', graduationMarketCap: '400', graduationSupplyPercent: 20, tradingFeeBps: 100, creatorFeePercent: 50, antiSniping: true, firstBuy: { quoteAmount: '0.5' } },
  });

/** Meteora's own SDK reading accounts through `read` (not our decoder). */
function sdkClient(read: (key: PublicKey) => Promise<unknown>): DynamicBondingCurveClient {
  const connection = { rpcEndpoint: 'test', getAccountInfo: read, getAccountInfoAndContext: async (key: PublicKey) => ({ context: { slot: 0 }, value: await read(key) }) } as unknown as Connection;
  return new DynamicBondingCurveClient(connection, 'confirmed');
}

/**
 * Posts a curve launch, runs it to its end and checks it on chain as `chain` reads it: the mint's
 * whole supply with its authority revoked, the pool owned by DBC on the launch's mint and config,
 * created by the funding wallet with the first buy in its reserve, and the config (read by Meteora's
 * SDK) with the launch's quote mint, threshold and creator fee share.
 */
async function curveLaunchOnChain(t: TestService, chain: ChainBackend): Promise<void> {
  const key = await t.key('acme', ['launches:write', 'launches:read']);
  const wallet = ((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string;
  const id = await t.createLaunch(key, curveBody(Keypair.generate().publicKey.toBase58()));
  await t.service.runner.drain();
  const got = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
  expect(got.error).toBeNull();
  expect(got.status).toBe('complete');
  expect(got.steps.map((s: any) => s.name)).toEqual(['create_curve']);
  const pool = got.results.pool;

  const { mint } = await readMintBack(chain, got.results.mint);
  expect(mint.supply).toBe(1_000_000_000n * 10n ** 9n);
  expect(mint.mintAuthority).toBeNull();
  const poolAccount = await chain.getAccountInfo(new PublicKey(pool.address));
  expect(poolAccount?.owner.toBase58()).toBe(DEFAULT_PROGRAM_IDS.curve);
  const state = (await curveKit()).decodeCurveState(poolAccount!.data);
  expect(state.baseMint.toBase58()).toBe(got.results.mint);
  expect(state.config.toBase58()).toBe(pool.config);
  expect(state.creator.toBase58()).toBe(wallet);
  expect(state.quoteReserve > 494_000_000n && state.quoteReserve < 496_000_000n).toBe(true);

  const config = await sdkClient((k) => chain.getAccountInfo(k)).state.getPoolConfig(pool.config);
  if (!config) throw new Error(`no DBC config at ${pool.config}`);
  expect(config.quoteMint.toBase58()).toBe(WSOL);
  expect(config.migrationQuoteThreshold.toString()).toBe(pool.graduationQuoteLamports);
  expect(Number(pool.graduationQuoteLamports) / 1e9).toBeCloseTo(80, 0);
  expect(config.creatorTradingFeePercentage).toBe(50);
}

// The chain thread runs beside a SQLite service database only (chainThread.test.ts).
describe.skipIf(!haveBinaries(...IDS) || onPostgres)(`a bonding-curve launch with the chain thread on${needs(...IDS)}`, () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CHAIN_PROGRAMS_DIR: programsDir ?? '', CHAIN_THREAD: 'on' } });
  });
  afterAll(async () => t?.close());

  it('completes, and the pool is on chain with its config', async () => {
    expect(t.config.chain.thread).toBe(true);
    await curveLaunchOnChain(t, t.service.chain);
  }, 60_000);
});

describe.skipIf(!haveBinaries(...IDS))(`a bonding-curve launch against a cluster over JSON-RPC${needs(...IDS)}`, () => {
  let nodeDir: ReturnType<typeof testConfig>;
  let nodeDb: OpenedDatabase;
  let node: EmbeddedBackend;
  let server: Awaited<ReturnType<typeof startChainRpcServer>>;
  let t: TestService;
  beforeAll(async () => {
    // The chain `npm run chain` builds (scripts/chain.ts): the service's embedded chain, with its programs and genesis accounts.
    nodeDir = testConfig({ CHAIN_PROGRAMS_DIR: programsDir ?? '', SOLANA_RPC_URL: '', SOLANA_PAYER_KEYPAIR: '' });
    nodeDb = openDatabase(join(nodeDir.dir, 'node.sqlite'));
    await migrateToLatest(nodeDb.db);
    node = (await createChainBackend(nodeDir.config, { db: nodeDb.db, clock: systemClock, logger: silentLogger() })) as EmbeddedBackend;
    server = await startChainRpcServer({ chain: node, host: '127.0.0.1', port: 0, logger: silentLogger() });
    const payer = Keypair.generate();
    const payerPath = join(nodeDir.dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    await node.airdrop(payer.publicKey, 20n * BigInt(LAMPORTS_PER_SOL));
    t = await startTestService({ env: { SOLANA_RPC_URL: server.url, SOLANA_PAYER_KEYPAIR: payerPath } });
    const key = await t.key('acme', ['launches:read']);
    const wallet = ((await (await t.request('/api/funding', { key })).json()) as any).funding.address as string;
    await node.airdrop(new PublicKey(wallet), 5n * BigInt(LAMPORTS_PER_SOL));
  });
  afterAll(async () => {
    await t?.close();
    await server?.close();
    await node?.close();
    await nodeDb?.close();
    nodeDir?.cleanup();
  });

  it('completes, and the pool is on chain with its config, read through a web3.js Connection', async () => {
    const connection = new Connection(server.url, 'confirmed');
    const read = { getAccountInfo: (k: PublicKey) => connection.getAccountInfo(k, 'confirmed') } as unknown as ChainBackend;
    await curveLaunchOnChain(t, read);
  }, 90_000);
});
