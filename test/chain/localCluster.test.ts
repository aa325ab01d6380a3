import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SendTransactionError,
  SystemProgram,
  Transaction,
  TransactionMessage,
  VersionedTransaction,
  sendAndConfirmTransaction,
} from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, createMint, getMint, getOrCreateAssociatedTokenAccount, getTokenMetadata, mintTo } from '@solana/spl-token';
import bs58 from 'bs58';
import WebSocket from 'ws';
import type { OpenedDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer, type ChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';
import { ataBalance, readMintBack } from './support/readBack.js';

// The embedded chain as a local cluster (docs/chain.md), driven by web3.js `Connection` itself.
describe('embedded chain JSON-RPC server', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  let server: ChainRpcServer;
  let connection: Connection;

  const rpc = async (method: string, params: unknown[] = []) => {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    return (await res.json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
  };
  const funded = async (sol = 2) => {
    const wallet = Keypair.generate();
    const signature = await connection.requestAirdrop(wallet.publicKey, sol * LAMPORTS_PER_SOL);
    const latest = await connection.getLatestBlockhash();
    await connection.confirmTransaction({ signature, ...latest }, 'confirmed');
    return wallet;
  };

  beforeAll(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 3), clock: systemClock, logger: silentLogger() });
    server = await startChainRpcServer({ chain, host: '127.0.0.1', port: 0, logger: silentLogger() });
    connection = new Connection(server.url, { commitment: 'confirmed', wsEndpoint: server.wsUrl });
  });
  afterAll(async () => {
    await server.close();
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });

  it('airdrops through a real transfer that confirms, shows in the balance, the history and getTransaction', async () => {
    const wallet = Keypair.generate();
    const signature = await connection.requestAirdrop(wallet.publicKey, 3 * LAMPORTS_PER_SOL);
    const latest = await connection.getLatestBlockhash();
    const started = Date.now();
    const confirmed = await connection.confirmTransaction({ signature, ...latest }, 'confirmed');
    expect(confirmed.value.err).toBeNull();
    // The signature subscription confirmed it, not the blockhash's expiry (150 slots, a minute): a
    // bound far from that and from the fast path's milliseconds, with room for a loaded machine.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await connection.getBalance(wallet.publicKey)).toBe(3 * LAMPORTS_PER_SOL);

    const history = await connection.getSignaturesForAddress(wallet.publicKey);
    expect(history.map((h) => h.signature)).toEqual([signature]);
    expect(history[0]).toMatchObject({ err: null, confirmationStatus: 'finalized' });
    const tx = await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 });
    expect(tx?.meta?.err).toBeNull();
    const keys = tx?.transaction.message.staticAccountKeys.map((k) => k.toBase58()) ?? [];
    const index = keys.indexOf(wallet.publicKey.toBase58());
    expect(index).toBeGreaterThan(0);
    expect(tx?.meta?.preBalances[index]).toBe(0);
    expect(tx?.meta?.postBalances[index]).toBe(3 * LAMPORTS_PER_SOL);
    expect(tx?.meta?.fee).toBe(5000);
    expect(tx?.blockTime).toBeGreaterThan(0);
  });

  it('sends, confirms and reads back a transfer; history pages newest first with before/until', async () => {
    const from = await funded();
    const to = Keypair.generate().publicKey;
    const sigs: string[] = [];
    for (let i = 1; i <= 3; i++) {
      const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: to, lamports: i * 1_000_000 }));
      sigs.push(await sendAndConfirmTransaction(connection, tx, [from]));
    }
    expect(await connection.getBalance(to)).toBe(6_000_000);
    const all = await connection.getSignaturesForAddress(to);
    expect(all.map((s) => s.signature)).toEqual([...sigs].reverse());
    const page = await connection.getSignaturesForAddress(to, { limit: 1, before: sigs[2] });
    expect(page.map((s) => s.signature)).toEqual([sigs[1]]);
    const since = await connection.getSignaturesForAddress(to, { until: sigs[0] });
    expect(since.map((s) => s.signature)).toEqual([sigs[2], sigs[1]]);
    const statuses = await connection.getSignatureStatuses(sigs, { searchTransactionHistory: true });
    expect(statuses.value.map((s) => s?.confirmationStatus)).toEqual(['finalized', 'finalized', 'finalized']);

    // A v0 transaction, and the same history through the raw method with base64 encoding.
    const { blockhash } = await connection.getLatestBlockhash();
    const message = new TransactionMessage({ payerKey: from.publicKey, recentBlockhash: blockhash, instructions: [SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: to, lamports: 7 })] }).compileToV0Message();
    const v0 = new VersionedTransaction(message);
    v0.sign([from]);
    const v0sig = await connection.sendTransaction(v0);
    const read = await connection.getTransaction(v0sig, { maxSupportedTransactionVersion: 0 });
    expect(read?.version).toBe(0);
    const refused = await rpc('getTransaction', [v0sig, { encoding: 'json' }]);
    expect(refused.error?.code).toBe(-32015);
    const raw = await rpc('getTransaction', [v0sig, { encoding: 'base64', maxSupportedTransactionVersion: 0 }]);
    expect((raw.result as { transaction: [string, string] }).transaction[0]).toBe(Buffer.from(v0.serialize()).toString('base64'));
  });

  it('refuses a failing transaction at preflight with the simulation logs; with skipPreflight it lands failed', async () => {
    const from = await funded(1);
    const to = Keypair.generate().publicKey;
    const tooMuch = new Transaction().add(SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: to, lamports: 5 * LAMPORTS_PER_SOL }));
    const latest = await connection.getLatestBlockhash();
    tooMuch.recentBlockhash = latest.blockhash;
    tooMuch.feePayer = from.publicKey;
    tooMuch.sign(from);

    const simulated = await connection.simulateTransaction(tooMuch);
    expect(simulated.value.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(simulated.value.logs?.some((l) => /insufficient lamports/.test(l))).toBe(true);

    const error = await connection.sendRawTransaction(tooMuch.serialize()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendTransactionError);
    expect((error as SendTransactionError).message).toMatch(/custom program error: 0x1/);
    expect((await connection.getSignaturesForAddress(to)).length).toBe(0);

    const signature = await connection.sendRawTransaction(tooMuch.serialize(), { skipPreflight: true });
    const status = await connection.confirmTransaction({ signature, ...latest });
    expect(status.value.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    const history = await connection.getSignaturesForAddress(to);
    expect(history.map((h) => [h.signature, h.err])).toEqual([[signature, { InstructionError: [0, { Custom: 1 }] }]]);
    expect(await connection.getBalance(to)).toBe(0);
    expect(await connection.getBalance(from.publicKey)).toBe(LAMPORTS_PER_SOL - 5000);

    const stale = await rpc('sendTransaction', [bs58.encode(tooMuch.serialize()), { skipPreflight: true }]);
    expect(stale.result).toBe(signature); // base58 default encoding; already processed answers its signature
  });

  it('answers the cluster and fee methods a client uses', async () => {
    const slot = await connection.getSlot();
    expect(slot).toBeGreaterThan(0);
    expect(await connection.getBlockHeight()).toBeGreaterThanOrEqual(slot);
    const epoch = await connection.getEpochInfo();
    expect(epoch.slotsInEpoch).toBe(432_000);
    expect((await connection.getVersion())['solana-core']).toMatch(/^\d+\.\d+\.\d+$/);
    expect((await rpc('getHealth')).result).toBe('ok');
    expect(await connection.getGenesisHash()).toBe(chain.genesisHash);
    expect(await connection.getMinimumBalanceForRentExemption(165)).toBe(await chain.getMinimumBalanceForRentExemption(165));
    const from = Keypair.generate().publicKey;
    const { blockhash } = await connection.getLatestBlockhash();
    const message = new TransactionMessage({ payerKey: from, recentBlockhash: blockhash, instructions: [SystemProgram.transfer({ fromPubkey: from, toPubkey: from, lamports: 1 })] }).compileToV0Message();
    expect((await connection.getFeeForMessage(message)).value).toBe(5000);
    expect((await connection.isBlockhashValid(blockhash)).value).toBe(true);
    expect((await connection.isBlockhashValid(bs58.encode(Buffer.alloc(32, 9)))).value).toBe(false);

    expect((await rpc('noSuchMethod')).error?.code).toBe(-32601);
    expect((await rpc('getBalance', ['not-a-key'])).error?.code).toBe(-32602);
    const parse = await fetch(server.url, { method: 'POST', body: '{' });
    expect(((await parse.json()) as { error: { code: number } }).error.code).toBe(-32700);
    expect((await fetch(server.url)).status).toBe(405);
    const batch = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'getSlot' }, { jsonrpc: '2.0', id: 2, method: 'getHealth' }]),
    });
    expect(((await batch.json()) as Array<{ id: number }>).map((a) => a.id)).toEqual([1, 2]);
  });

  it("reads a token-2022 launch's mint, metadata and balances through Connection exactly as the service sees them", async () => {
    const plan = samplePlan({ allocations: { creator: 40, vesting: 0, treasury: 60, pool: 0 } });
    const harness = new StepHarness(chain, plan);
    const mint = (await harness.run('create_mint')).result.mint as string;
    await harness.run('create_metadata');
    const distributed = await harness.run('distribute_supply');
    const allocations = distributed.result.allocations as Array<{ kind: string; owner: string; tokenAccount: string; amount: string }>;

    const mintKey = new PublicKey(mint);
    const service = await readMintBack(chain, mint);
    const viaRpc = await getMint(connection, mintKey, 'confirmed', TOKEN_2022_PROGRAM_ID);
    expect(viaRpc.supply).toBe(service.mint.supply);
    expect(viaRpc.decimals).toBe(service.mint.decimals);
    expect(viaRpc.mintAuthority?.toBase58()).toBe(service.mint.mintAuthority?.toBase58());
    expect((await getTokenMetadata(connection, mintKey, 'confirmed'))?.symbol).toBe('DEMO');
    expect(allocations.length).toBeGreaterThanOrEqual(2);

    for (const allocation of allocations) {
      const balance = await connection.getTokenAccountBalance(new PublicKey(allocation.tokenAccount));
      expect(balance.value.amount).toBe(allocation.amount);
      expect(balance.value.decimals).toBe(9);
      expect(BigInt(balance.value.amount)).toBe(await ataBalance(chain, mint, allocation.owner, TOKEN_2022_PROGRAM_ID));
      const owned = await connection.getTokenAccountsByOwner(new PublicKey(allocation.owner), { mint: mintKey });
      expect(owned.value.map((a) => a.pubkey.toBase58())).toEqual([allocation.tokenAccount]);
    }
    const holders = await connection.getProgramAccounts(TOKEN_2022_PROGRAM_ID, { filters: [{ memcmp: { offset: 0, bytes: mint } }] });
    expect(holders.map((h) => h.pubkey.toBase58()).sort()).toEqual(allocations.map((a) => a.tokenAccount).sort());
    const byOwner = await connection.getTokenAccountsByOwner(new PublicKey(plan.creator), { programId: TOKEN_2022_PROGRAM_ID });
    expect(byOwner.value).toHaveLength(1);
    const many = await connection.getMultipleAccountsInfo([mintKey, PublicKey.unique()]);
    expect(many[0]?.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(many[1]).toBeNull();

    // The launch's own transactions are in the mint's history, readable with their token balances.
    const history = await connection.getSignaturesForAddress(mintKey);
    expect(history.length).toBeGreaterThanOrEqual(2);
    const last = await connection.getTransaction(history[0]?.signature ?? '', { maxSupportedTransactionVersion: 0 });
    expect(last?.meta?.postTokenBalances?.some((b) => b.mint === mint)).toBe(true);
  });

  it('answers the token read methods holders and explorers use: supply, largest accounts, and jsonParsed mints and accounts (SPL Token and Token-2022)', async () => {
    const plan = samplePlan({ allocations: { creator: 30, vesting: 0, treasury: 70, pool: 0 } });
    const harness = new StepHarness(chain, plan);
    const mint = new PublicKey((await harness.run('create_mint')).result.mint as string);
    await harness.run('create_metadata');
    const allocations = (await harness.run('distribute_supply')).result.allocations as Array<{ owner: string; tokenAccount: string; amount: string }>;
    const service = (await readMintBack(chain, mint.toBase58())).mint;

    const supply = await connection.getTokenSupply(mint);
    expect(supply.value).toMatchObject({ amount: service.supply.toString(), decimals: 9 });
    expect(supply.value.uiAmountString).toBe((service.supply / 10n ** 9n).toString());
    const largest = await connection.getTokenLargestAccounts(mint);
    const expected = [...allocations].sort((a, b) => (BigInt(b.amount) > BigInt(a.amount) ? 1 : -1));
    expect(largest.value.map((a) => [a.address.toBase58(), a.amount])).toEqual(expected.map((a) => [a.tokenAccount, a.amount]));

    // jsonParsed: a Token-2022 mint with extensions, and its token accounts, as a node parses them.
    const parsedMint = await connection.getParsedAccountInfo(mint);
    expect((parsedMint.value?.data as any).program).toBe('spl-token-2022');
    expect((parsedMint.value?.data as any).parsed).toEqual({
      type: 'mint',
      info: { decimals: 9, freezeAuthority: service.freezeAuthority?.toBase58() ?? null, isInitialized: true, mintAuthority: service.mintAuthority?.toBase58() ?? null, supply: service.supply.toString() },
    });
    const owned = await connection.getParsedTokenAccountsByOwner(new PublicKey(allocations[0]!.owner), { mint });
    expect(owned.value).toHaveLength(1);
    expect(owned.value[0]!.account.data.parsed).toEqual({
      type: 'account',
      info: { isNative: false, mint: mint.toBase58(), owner: allocations[0]!.owner, state: 'initialized', tokenAmount: expect.objectContaining({ amount: allocations[0]!.amount, decimals: 9 }) },
    });
    // Anything else comes in base64 even when jsonParsed is asked for, as on a node.
    const wallet = await funded(1);
    const plain = await connection.getParsedAccountInfo(wallet.publicKey);
    expect(Buffer.isBuffer(plain.value?.data)).toBe(true);

    // A classic SPL Token mint made by a wallet through the cluster reads the same way.
    const classic = await createMint(connection, wallet, wallet.publicKey, null, 2);
    const holder = await getOrCreateAssociatedTokenAccount(connection, wallet, classic, wallet.publicKey);
    await mintTo(connection, wallet, classic, holder.address, wallet, 12_345);
    expect((await connection.getTokenSupply(classic)).value).toMatchObject({ amount: '12345', decimals: 2, uiAmountString: '123.45' });
    expect((await connection.getTokenLargestAccounts(classic)).value.map((a) => a.address.toBase58())).toEqual([holder.address.toBase58()]);
    expect(((await connection.getParsedAccountInfo(classic)).value?.data as any).program).toBe('spl-token');

    const notMint = await rpc('getTokenSupply', [wallet.publicKey.toBase58()]);
    expect(notMint.error).toMatchObject({ code: -32602, message: 'Invalid param: not a Token mint' });
  });

  it('caps pending signature subscriptions per connection and in all with a JSON-RPC error, freeing them on unsubscribe, notification and close', async () => {
    const capped = await startChainRpcServer({ chain, host: '127.0.0.1', port: 0, logger: silentLogger(), subscriptionLimits: { perConnection: 2, total: 3 } });
    const open = async () => {
      const socket = new WebSocket(capped.wsUrl);
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      const inbox: Array<Record<string, any>> = [];
      const waiters: Array<() => void> = [];
      socket.on('message', (raw) => {
        inbox.push(JSON.parse(String(raw)) as Record<string, any>);
        waiters.splice(0).forEach((w) => w());
      });
      const next = async (match: (m: Record<string, any>) => boolean) => {
        for (;;) {
          const found = inbox.findIndex(match);
          if (found >= 0) return inbox.splice(found, 1)[0]!;
          await new Promise<void>((resolve) => waiters.push(resolve));
        }
      };
      let id = 0;
      const call = async (method: string, params: unknown[]) => {
        const mine = ++id;
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: mine, method, params }));
        return next((m) => m.id === mine);
      };
      return { socket, call, next };
    };
    const unknown = () => bs58.encode(Buffer.from(Keypair.generate().secretKey));
    try {
      const a = await open();
      const b = await open();
      expect((await a.call('signatureSubscribe', [unknown()])).result).toEqual(expect.any(Number));
      const second = (await a.call('signatureSubscribe', [unknown()])).result as number;
      const refused = await a.call('signatureSubscribe', [unknown()]);
      expect(refused.error).toMatchObject({ code: -32005, message: expect.stringContaining('at most 2 pending signature subscriptions per connection'), data: { limit: 'perConnection', max: 2 } });
      expect((await b.call('signatureSubscribe', [unknown()])).result).toEqual(expect.any(Number));
      const full = await b.call('signatureSubscribe', [unknown()]);
      expect(full.error).toMatchObject({ code: -32005, message: expect.stringContaining('at most 3 pending signature subscriptions in all'), data: { limit: 'total', max: 3 } });
      // Another connection cannot end a's subscription; a can.
      await b.call('signatureUnsubscribe', [second]);
      expect((await b.call('signatureSubscribe', [unknown()])).error?.data).toEqual({ limit: 'total', max: 3 });
      await a.call('signatureUnsubscribe', [second]);
      // A processed signature is notified at once, which frees its place too.
      const wallet = Keypair.generate();
      const landed = await connection.requestAirdrop(wallet.publicKey, LAMPORTS_PER_SOL);
      const sub = (await b.call('signatureSubscribe', [landed])).result as number;
      const note = await b.next((m) => m.method === 'signatureNotification');
      expect(note.params).toMatchObject({ subscription: sub, result: { value: { err: null } } });
      expect((await b.call('signatureSubscribe', [unknown()])).result).toEqual(expect.any(Number));
      // Closing a connection frees all of its subscriptions.
      a.socket.close();
      await new Promise((resolve) => a.socket.once('close', resolve));
      const c = await open();
      for (;;) {
        // The server sees the close a moment after the client does.
        const answer = await c.call('signatureSubscribe', [unknown()]);
        if (answer.result !== undefined) break;
      }
      expect((await c.call('signatureSubscribe', [unknown()])).error?.data).toEqual({ limit: 'total', max: 3 });
      for (const s of [b.socket, c.socket]) s.close();
    } finally {
      await capped.close();
    }
  });
});
