import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { afterEach, describe, expect, it } from 'vitest';
import { startChainThread } from '../../src/app/serviceChain.js';
import type { EmbeddedBackend } from '../../src/chain/embedded/backend.js';
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
describe.skipIf(onPostgres)('the embedded chain on its own thread (CHAIN_THREAD=on)', () => {
  it('runs a launch there, commits the chain to the service database and relays its log lines', async () => {
    const { logger, lines } = captureLogger();
    t = await startTestService({ env: { LOG_LEVEL: 'info', CHAIN_THREAD: 'on' }, logger });
    expect(t.config.chain.thread).toBe(true);
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const body = launchBody({ totalSupply: '2500000', decimals: 6, revokeMintAuthority: true });
    const active = new Set<string>();
    t.service.chain.history.onActivity?.((addresses) => addresses.forEach((a) => active.add(a)));
    const embedded = t.service.chain as EmbeddedBackend;
    const countBefore = embedded.transactionCount();
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
    // The activity of its transactions reached the main thread (carried on the thread's answers):
    // the mint's accounts, and the chain's transaction count past the launch's transactions.
    const steps = await t.service.db.selectFrom('launch_steps').select('transactions').where('launch_id', '=', id).execute();
    const signatures = steps.flatMap((s) => JSON.parse(s.transactions) as unknown[]);
    expect(signatures.length).toBeGreaterThan(0);
    expect(active.has(mint)).toBe(true);
    expect(embedded.transactionCount()).toBeGreaterThanOrEqual(countBefore + signatures.length);

    // The chain thread committed the chain's state to the service's database (its own connection).
    const stored = await t.service.db.selectFrom('chain_accounts').select(['address', 'owner']).where('address', '=', mint).execute();
    expect(stored).toEqual([{ address: mint, owner: TOKEN_2022_PROGRAM_ID.toBase58() }]);

    // The chain thread's log lines come out of the service's logger, marked as the chain thread's.
    const restored = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'embedded chain restored');
    expect(restored).toMatchObject({ thread: 'chain', component: 'chain', payer: t.service.chain.payer.publicKey.toBase58() });
  });

  it('answers the chain calls the main thread makes, with the retry classes intact', async () => {
    t = await startTestService({ env: { CHAIN_THREAD: 'on' } });
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
    const { config, cleanup } = testConfig({ CHAIN_THREAD: 'on' });
    cleanups.push(cleanup);
    const database = openDatabase(config.databasePath);
    cleanups.push(() => database.close());
    await migrateToLatest(database.db);
    const thread = await startChainThread(config, { clock: systemClock, logger: silentLogger(), writeLock: database.shareWriteLock() });
    cleanups.push(() => thread.backend.close());

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

  it('starts a chain thread that stopped again from the database, failing what was in flight as retriable meanwhile', async () => {
    const { logger, lines } = captureLogger();
    t = await startTestService({ env: { CHAIN_THREAD: 'on' }, logger });
    const chain = t.service.chain as EmbeddedBackend;
    const holder = Keypair.generate().publicKey;
    await chain.requestAirdrop(holder, 3n * BigInt(LAMPORTS_PER_SOL));
    const thread = t.service.chainThread;
    const first = thread?.current();
    expect(first?.threadId).toBeGreaterThan(0);

    await first!.terminate(); // as an uncaught error would end it
    const during = await chain.getBalance(holder).catch((error: unknown) => error);
    expect(during).toBeInstanceOf(TransientError);
    expect((during as TransientError).code).toBe('chain_unavailable');

    // Back within a few seconds, on a new thread, with the state it had (polled up to 45 s: a loaded
    // CI machine loads the new thread's programs slowly; a thread that never came back still fails).
    let balance: number | undefined;
    for (const deadline = Date.now() + 45_000; Date.now() < deadline && balance === undefined; ) {
      balance = await chain.getBalance(holder).catch(() => undefined);
      if (balance === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(balance).toBe(3 * LAMPORTS_PER_SOL);
    expect(thread?.current()?.threadId).not.toBe(first?.threadId);
    // And it runs launches again.
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const id = await t.createLaunch(key);
    t.service.start();
    await waitComplete(t, id);
    const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages).toContain('chain thread stopped; starting it again');
    expect(messages).toContain('chain thread running again');
  });

  it('commits the chain between the main thread’s transactions, never inside one, with the event loop free meanwhile', async () => {
    t = await startTestService({ env: { CHAIN_THREAD: 'on' } });
    const chain = t.service.chain as EmbeddedBackend;
    const holder = Keypair.generate().publicKey;
    let airdropped: string | undefined;
    let committedAt = 0;
    const transferLanded = async () => (await t!.service.db.selectFrom('chain_accounts').select('address').where('address', '=', holder.toBase58()).execute()).length > 0;
    // The main thread holds a write transaction open for 300 ms while the chain thread commits an airdrop.
    const ticks: number[] = [];
    const ticker = setInterval(() => ticks.push(Date.now()), 20);
    await t.service.db.transaction().execute(async (trx) => {
      await trx.insertInto('service_meta').values({ key: 'test.hold', value: '1' }).execute();
      void chain.requestAirdrop(holder, BigInt(LAMPORTS_PER_SOL)).then((signature) => (airdropped = signature));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(airdropped).toBeUndefined();
      committedAt = Date.now();
    });
    for (let i = 0; i < 100 && airdropped === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    clearInterval(ticker);
    expect(airdropped).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect(await transferLanded()).toBe(true);
    expect(await chain.getBalance(holder)).toBe(LAMPORTS_PER_SOL);
    expect(committedAt).toBeGreaterThan(0);
    // The event loop kept turning while the chain waited for its turn (no stall in SQLite's busy handler).
    const gaps = ticks.slice(1).map((at, i) => at - ticks[i]!);
    expect(Math.max(...gaps)).toBeLessThan(150);
  });
});
