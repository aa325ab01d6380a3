import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Connection, Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

const root = join(import.meta.dirname, '..', '..');

/**
 * The local cluster of a running development service (docs/chain.md), as a developer's machine
 * meets it: a flood of subscriptions over its WebSocket must not stall the service, and a page on
 * another origin may neither call it nor connect to it.
 */
describe('the local cluster of a running service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'launch-cluster-'));
  let child: ChildProcess;
  let serviceUrl: string;
  let rpcUrl: string;
  let wsUrl: string;

  beforeAll(async () => {
    child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'app', 'main.ts')], {
      cwd: root,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', CHAIN_RPC_PORT: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'info', NODE_ENV: 'development', DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.once('exit', () => reject(new Error(`service exited before serving: ${stderr}`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!line.startsWith('{')) return;
        const entry = JSON.parse(line) as { msg?: string; port?: number; url?: string };
        if (entry.msg === 'launch service listening') serviceUrl = `http://127.0.0.1:${entry.port}`;
        if (entry.msg === 'embedded chain serves JSON-RPC') rpcUrl = entry.url!;
        if (serviceUrl !== undefined && rpcUrl !== undefined) resolve();
      });
    });
    wsUrl = rpcUrl.replace(/^http/, 'ws');
    // The first request after start is slow on its own (modules compiled on first use): not part of the bound.
    await fetch(`${serviceUrl}/api/health`).then((r) => r.arrayBuffer());
  }, 60_000);
  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const rpc = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const balance = async (address: string) => ((await (await rpc({ jsonrpc: '2.0', id: 1, method: 'getBalance', params: [address] })).json()) as { result: { value: number } }).result.value;
  const connect = (origin?: string) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(wsUrl, origin === undefined ? {} : { origin });
      socket.once('open', () => resolve(socket));
      socket.once('unexpected-response', (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
      socket.once('error', reject);
    });

  it('answers /api/health fast while one connection floods 2 000 signatureSubscribe messages, and refuses those past the cap', async () => {
    const socket = await connect();
    const answers: Array<{ id: number; result?: number; error?: { code: number; message: string; data?: unknown } }> = [];
    const allAnswered = new Promise<void>((resolve) => {
      socket.on('message', (raw) => {
        const message = JSON.parse(String(raw)) as (typeof answers)[number];
        if (message.id !== undefined) answers.push(message);
        if (answers.length === 2000) resolve();
      });
    });
    // Built first: encoding them takes this test process seconds on a loaded machine, which the bound must not count.
    const messages = Array.from({ length: 2000 }, (_, i) =>
      JSON.stringify({ jsonrpc: '2.0', id: i, method: 'signatureSubscribe', params: [bs58.encode(randomBytes(64)), { commitment: 'confirmed' }] }),
    );
    // Health polled throughout: every answer within the bound, none timing out.
    const latencies: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const started = performance.now();
        const res = await fetch(`${serviceUrl}/api/health`, { signal: AbortSignal.timeout(5_000) });
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
      }
    })();
    // Sent as fast as the socket takes them, yielding between chunks so this process's own health requests go out.
    for (let i = 0; i < messages.length; i += 100) {
      for (const message of messages.slice(i, i + 100)) socket.send(message);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await allAnswered;
    // A while longer, still watched (the subscriptions stay pending).
    const after = performance.now();
    while (performance.now() - after < 1_500) await fetch(`${serviceUrl}/api/health`).then((r) => r.arrayBuffer());
    polling = false;
    await poller;

    // Measured here: the slowest 100-250 ms (a loaded 2-core machine), the median under 30 ms; before,
    // the service froze for minutes. The bound leaves room for machine load, not for a stall.
    latencies.sort((a, b) => a - b);
    expect(latencies.length).toBeGreaterThan(10);
    expect(latencies.at(-1)).toBeLessThan(2_000);
    expect(latencies[Math.floor(latencies.length / 2)]).toBeLessThan(200);
    const accepted = answers.filter((a) => a.result !== undefined);
    const refused = answers.filter((a) => a.error !== undefined);
    expect(accepted).toHaveLength(256);
    expect(refused).toHaveLength(2000 - 256);
    expect(refused[0]!.error).toMatchObject({ code: -32005, message: expect.stringMatching(/^Too many subscriptions: at most 256 pending signature subscriptions per connection/), data: { limit: 'perConnection', max: 256 } });
    socket.close();

    // The cluster still confirms through its subscriptions: web3.js waits for the notification.
    const connection = new Connection(rpcUrl, { commitment: 'confirmed', wsEndpoint: wsUrl });
    const wallet = Keypair.generate();
    const signature = await connection.requestAirdrop(wallet.publicKey, LAMPORTS_PER_SOL);
    const latest = await connection.getLatestBlockhash();
    expect((await connection.confirmTransaction({ signature, ...latest }, 'confirmed')).value.err).toBeNull();
  }, 120_000);

  it('refuses a page on another origin: no requestAirdrop over HTTP (nor a CORS grant), no WebSocket', async () => {
    const target = Keypair.generate().publicKey.toBase58();
    const airdrop = { jsonrpc: '2.0', id: 1, method: 'requestAirdrop', params: [target, LAMPORTS_PER_SOL] };
    // A "simple" request (text/plain) is sent by a browser without a preflight: it must be refused, not just unreadable.
    const simple = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'text/plain', origin: 'https://evil.example' }, body: JSON.stringify(airdrop) });
    expect(simple.status).toBe(403);
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
    expect(((await simple.json()) as { error: { message: string } }).error.message).toMatch(/^Origin not allowed/);
    const preflight = await fetch(rpcUrl, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const json = await rpc(airdrop, { origin: 'https://evil.example' });
    expect(json.status).toBe(403);
    expect(json.headers.get('access-control-allow-origin')).toBeNull();
    for (const origin of ['null', 'http://localhost.evil.example', 'http://127.0.0.1.nip.io:3000']) expect((await rpc(airdrop, { origin })).status).toBe(403);
    expect(await balance(target)).toBe(0);
    await expect(connect('https://evil.example')).rejects.toThrow('refused with 403');

    // A page served from this machine may: CORS names its origin (never `*`).
    const local = await rpc(airdrop, { origin: 'http://localhost:5173' });
    expect(local.status).toBe(200);
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(((await local.json()) as { result: string }).result).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect(await balance(target)).toBe(LAMPORTS_PER_SOL);
    const page = await connect('http://127.0.0.1:5173');
    page.close();
    // And tools that send no Origin, as before, with no CORS header at all.
    const tool = await rpc({ jsonrpc: '2.0', id: 1, method: 'getHealth' });
    expect(tool.headers.get('access-control-allow-origin')).toBeNull();
    (await connect()).close();
  }, 60_000);
});
