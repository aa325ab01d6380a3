import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Keypair, PublicKey, SystemProgram } from '@solana/web3.js';
import bs58 from 'bs58';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { serializeSigned } from '../../src/chain/ed25519.js';
import { buildSignedTransaction } from '../../src/chain/transaction.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

const SOL = 1_000_000_000;

interface Delivered {
  event: string;
  launchId: string | null;
  sequence: number;
  data: Record<string, string>;
}

/** A receiver on 127.0.0.1 that keeps only the deliveries whose signature verifies with `secret`. */
async function startReceiver(): Promise<{ url: string; events: Delivered[]; rejected: number; secret?: string; close(): Promise<void> }> {
  const state: { url: string; events: Delivered[]; rejected: number; secret?: string; close(): Promise<void> } = { url: '', events: [], rejected: 0, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        const { payload } = verifyWebhook(raw, req.headers as IncomingHttpHeaders, state.secret ?? 'unset');
        state.events.push(payload as Delivered);
        res.writeHead(200).end('ok');
      } catch {
        state.rejected += 1;
        res.writeHead(401).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

let t: TestService | undefined;
const receivers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await t?.close();
  t = undefined;
  for (const r of receivers.splice(0)) await r.close();
});

/** Waits (bounded) until `check` holds; the service's loops run meanwhile. */
async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('funding events', () => {
  it('reports deposits, low balance once per crossing and withdrawals, signed, to the owner’s endpoints only', async () => {
    t = await startTestService({ env: { WATCH_POLL_INTERVAL: '50ms', WEBHOOK_POLL_INTERVAL_MS: '50ms' } });
    const svc = t;
    const acme = await t.key('acme', ['launches:write', 'launches:read', 'funds:withdraw']);
    const other = await t.key('other', ['launches:write', 'launches:read']);
    const admin = await t.key('ops', ['admin']);
    const mine = await startReceiver();
    const theirs = await startReceiver();
    receivers.push(mine, theirs);
    for (const [key, receiver] of [
      [acme, mine],
      [other, theirs],
    ] as const) {
      const res = await t.request('/api/webhook-endpoints', { method: 'POST', key, json: { url: receiver.url, events: ['funding.*'] } });
      expect(res.status).toBe(201);
      receiver.secret = ((await res.json()) as { endpoint: { secret: string } }).endpoint.secret;
    }
    t.service.start();
    const chain = t.service.chain;
    const balance = async (address: string) => chain.getBalance(new PublicKey(address));
    const walletOf = async (key: string) => ((await (await svc.request('/api/funding', { key })).json()) as { funding: { address: string } }).funding.address;
    const wallet = await walletOf(acme);
    const otherWallet = await walletOf(other);
    const deposits = () => mine.events.filter((e) => e.event === 'funding.deposit_received');
    const lows = () => mine.events.filter((e) => e.event === 'funding.low_balance');

    // The development airdrop of the new wallet is a deposit like any other.
    const airdrop = await until('the airdrop as a deposit', () => deposits()[0]);
    expect(airdrop).toMatchObject({ launchId: null, data: { address: wallet, lamports: String(100 * SOL), balanceLamports: String(100 * SOL) } });

    // A deposit from another keypair: amount, signature and the new balance.
    const funder = Keypair.generate();
    const funded = await chain.requestAirdrop!(funder.publicKey, BigInt(200 * SOL));
    await chain.confirmTransaction(funded, (await chain.getBlockHeight()) + 150, 'confirmed');
    const deposit = async (lamports: number): Promise<string> => {
      const tx = buildSignedTransaction(chain, funder, [SystemProgram.transfer({ fromPubkey: funder.publicKey, toPubkey: new PublicKey(wallet), lamports })], [], await chain.getLatestBlockhash());
      const signature = bs58.encode(tx.signature!);
      await chain.sendRawTransaction(serializeSigned(tx));
      await chain.confirmTransaction(signature, (await chain.getBlockHeight()) + 150, 'confirmed');
      return signature;
    };
    const depositSeen = async (lamports: number) => {
      const signature = await deposit(lamports);
      const expected = await balance(wallet);
      const event = await until(`the deposit ${signature}`, () => deposits().find((e) => e.data.signature === signature));
      expect(event.data).toEqual({ address: wallet, lamports: String(lamports), signature, balanceLamports: String(expected) });
      return event;
    };
    await depositSeen(3 * SOL);

    // A launch paid by the wallet spends from it: none of its transactions is a deposit.
    const launchId = await t.createLaunch(acme, launchBody());
    const status = await until(
      'the launch to end',
      async () => {
        const row = await svc.service.db.selectFrom('launches').select('status').where('id', '=', launchId).executeTakeFirst();
        return row?.status === 'complete' || row?.status === 'failed' ? row.status : undefined;
      },
      60_000,
    );
    expect(status).toBe('complete');
    await depositSeen(1 * SOL);
    expect(deposits()).toHaveLength(3);

    // Low balance: once when crossing below, not again while below, again after going above and below.
    const limits = await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { lowBalanceLamports: String(80 * SOL) } });
    expect(limits.status).toBe(200);
    const to = Keypair.generate().publicKey.toBase58();
    const withdraw = async (lamports: number) => {
      const res = await svc.request('/api/funding/withdraw', { method: 'POST', key: acme, json: { to, lamports: String(lamports) } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { withdrawal: { signature: string } }).withdrawal.signature;
    };
    const signature = await withdraw(30 * SOL);
    const withdrawn = await until('funding.withdrawn', () => mine.events.find((e) => e.event === 'funding.withdrawn'));
    expect(withdrawn).toMatchObject({ launchId: null, data: { address: wallet, to, lamports: String(30 * SOL), signature } });
    const first = await until('the first low balance', () => lows()[0]);
    expect(first.data).toEqual({ address: wallet, balanceLamports: String(await balance(wallet)), thresholdLamports: String(80 * SOL) });

    await withdraw(2 * SOL);
    await depositSeen(SOL / 2); // still below: seen after the withdrawal, and no second crossing
    expect(lows()).toHaveLength(1);

    await depositSeen(20 * SOL); // back above: re-armed
    expect(lows()).toHaveLength(1);
    await withdraw(25 * SOL);
    await until('the second low balance', () => lows()[1]);
    await depositSeen(SOL / 4);
    expect(lows()).toHaveLength(2);

    // Owner events number on their own, in order, and never reach another owner's endpoint.
    const sequences = mine.events.map((e) => e.sequence).sort((a, b) => a - b);
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(mine.rejected).toBe(0);
    expect(mine.events.every((e) => e.data.address === wallet)).toBe(true);
    expect(theirs.events.length).toBeGreaterThan(0); // its own airdrop
    expect(theirs.events.every((e) => e.data.address === otherWallet && e.launchId === null)).toBe(true);

    // The owner's event stream includes them.
    const events = await t.service.db.selectFrom('outbox_events').select(['event', 'launch_id']).where('launch_id', '=', 'own_acme').execute();
    expect(events.filter((e) => e.event.startsWith('funding.')).length).toBe(mine.events.length);
  }, 120_000);
});
