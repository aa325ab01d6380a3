import { existsSync } from 'node:fs';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { afterEach, describe, expect, it } from 'vitest';
import { startChainThread } from '../../src/app/serviceChain.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { embeddedChainFile, openEmbeddedChainStore } from '../../src/chain/embedded/chainFile.js';
import { deriveLaunchKeys } from '../../src/chain/keys.js';
import { launchKeySecret } from '../../src/launches/chainStepRunner.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TransientError } from '../../src/lib/retry.js';
import { parseLaunchRequest, storedRequest } from '../../src/launches/request.js';
import { ataBalance, readMintBack } from './support/readBack.js';
import { testConfig } from '../support/config.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { captureLogger } from '../support/webhooks.js';
import { onPostgres } from '../support/database.js';

let t: TestService | undefined;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  await t?.close();
  t = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function waitComplete(service: TestService, id: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const row = await service.service.db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow();
    if (row.status === 'complete') return;
    if (row.status === 'failed') throw new Error(`launch ${id} failed`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`launch ${id} did not complete`);
}

// The chain thread runs beside a SQLite service database (on PostgreSQL the embedded chain is a test-only in-process one).
describe.skipIf(onPostgres)('the embedded chain on its own thread (CHAIN_THREAD=on, the default)', () => {
  it('runs a launch there, keeps the chain in its own file and relays its log lines', async () => {
    const { logger, lines } = captureLogger();
    t = await startTestService({ env: { LOG_LEVEL: 'info' }, logger });
    expect(t.config.chain.thread).toBe(true);
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const body = launchBody({ totalSupply: '2500000', decimals: 6, revokeMintAuthority: true });
    const id = await t.createLaunch(key, body);
    t.service.start();
    await waitComplete(t, id);

    // Read back through the main thread's proxy of the chain.
    const launch = await t.service.db.selectFrom('launches').select('results').where('id', '=', id).executeTakeFirstOrThrow();
    const mint = (JSON.parse(launch.results) as { mint: string }).mint;
    const onChain = await readMintBack(t.service.chain, mint);
    expect(onChain.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(onChain.mint.supply).toBe(2_500_000n * 10n ** 6n);
    expect(onChain.mint.mintAuthority).toBeNull();
    expect(await ataBalance(t.service.chain, mint, body.creator as string, TOKEN_2022_PROGRAM_ID)).toBe(2_500_000n * 10n ** 6n);

    // The chain's state is in its own file, not in the service database.
    const chainFile = embeddedChainFile(t.config.databasePath)!;
    expect(existsSync(chainFile)).toBe(true);
    const inService = await t.service.db.selectFrom('chain_accounts').select('address').where('address', '=', mint).execute();
    expect(inService).toEqual([]);
    const store = openDatabase(chainFile, { backgroundCheckpoint: false });
    cleanups.push(() => store.close());
    const inChain = await store.db.selectFrom('chain_accounts').select(['address', 'owner']).where('address', '=', mint).execute();
    expect(inChain).toEqual([{ address: mint, owner: TOKEN_2022_PROGRAM_ID.toBase58() }]);

    // The chain thread's log lines come out of the service's logger, marked as the chain thread's.
    const restored = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'embedded chain restored');
    expect(restored).toMatchObject({ thread: 'chain', component: 'chain', payer: t.service.chain.payer.publicKey.toBase58() });
  });

  it('answers the chain calls the main thread makes, with the retry classes intact', async () => {
    t = await startTestService();
    const chain = t.service.chain;
    const stranger = Keypair.generate().publicKey;
    expect(await chain.getAccountInfo(stranger)).toBeNull();
    expect(await chain.getBalance(chain.payer.publicKey)).toBeGreaterThan(LAMPORTS_PER_SOL);
    expect((await chain.probe()).slot).toBeGreaterThan(0);
    expect(await chain.getSignatureStatus('1'.repeat(64))).toBeNull();
    // A transaction that never landed, whose blockhash has expired: a TransientError with its code, as in-process.
    const failure = await chain.confirmTransaction('1'.repeat(64), 0).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TransientError);
    expect((failure as TransientError).code).toBe('blockhash_expired');
    const { blockhash } = await chain.getLatestBlockhash();
    expect(chain.kind).toBe('embedded');
    expect((chain as EmbeddedBackend).isBlockhashValid(blockhash)).toBe(true);
  });

  it('never sends a step transaction whose record failed, and fails the step with the recorder error itself', async () => {
    const { config, dir, cleanup } = testConfig();
    cleanups.push(cleanup);
    const database = openDatabase(config.databasePath);
    cleanups.push(() => database.close());
    await migrateToLatest(database.db);
    const thread = await startChainThread(config, { chainFile: embeddedChainFile(config.databasePath)!, clock: systemClock, logger: silentLogger() });
    cleanups.push(() => thread.backend.close());
    expect(dir).not.toBe('');

    const parsed = parseLaunchRequest(launchBody(), { requireHttps: false });
    if (!parsed.ok) throw new Error('invalid fixture');
    const launchId = 'lch_recordfails';
    const lost = new Error('lease lost to a newer claim');
    const recorded: string[] = [];
    const before = thread.backend.transactionCount();
    const outcome = await thread
      .runStep({
        launchId,
        step: 'create_mint',
        request: storedRequest(parsed.value),
        results: {},
        pending: {},
        recordPending: async (label) => {
          recorded.push(label);
          throw lost;
        },
        logger: silentLogger(),
      })
      .catch((error: unknown) => error);
    expect(outcome).toBe(lost);
    expect(recorded.length).toBe(1);
    // Nothing reached the chain: no new transaction, and the launch's mint does not exist.
    expect(thread.backend.transactionCount()).toBe(before);
    const mint = deriveLaunchKeys(launchKeySecret(config.secretKey), launchId).mint.publicKey;
    expect(await thread.backend.getAccountInfo(mint)).toBeNull();
  });

  it('moves the chain of an older data directory (kept in the service database) to its own file on first start', async () => {
    const { config, dir, cleanup } = testConfig();
    cleanups.push(cleanup);
    // The layout before the chain had a file of its own: the chain's tables in the service database.
    const legacy = openDatabase(config.databasePath);
    await migrateToLatest(legacy.db);
    const old = await createEmbeddedBackend({ db: legacy.db, secretKey: config.secretKey, clock: systemClock, logger: silentLogger() });
    const holder = Keypair.generate().publicKey;
    await old.requestAirdrop(holder, 7n * BigInt(LAMPORTS_PER_SOL));
    const payer = old.payer.publicKey.toBase58();
    await old.close();
    await legacy.close();

    t = await startTestService({ env: { DATA_DIR: dir, SECRET_KEY: config.secretKey.toString('base64') } });
    expect(t.service.chain.payer.publicKey.toBase58()).toBe(payer);
    expect(await t.service.chain.getBalance(holder)).toBe(7 * LAMPORTS_PER_SOL);
    // The airdrop's history came along: the watcher's reads see it.
    const history = await t.service.chain.history.signaturesForAddress(holder.toBase58(), { limit: 10 });
    expect(history).toHaveLength(1);
    await t.close();
    t = undefined;

    // A second start opens the chain's file as it is (no second copy over a chain that moved on).
    const store = await openEmbeddedChainStore(embeddedChainFile(config.databasePath)!, { legacyFrom: config.databasePath });
    const rows = await store.db.selectFrom('service_meta').select('key').where('key', 'like', 'chain.embedded.%').execute();
    expect(rows.map((r) => r.key).sort()).toEqual(['chain.embedded.genesis', 'chain.embedded.payer']);
    await store.close();
  });
});
