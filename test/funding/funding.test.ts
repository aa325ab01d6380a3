import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair, PublicKey, SystemProgram } from '@solana/web3.js';
import { afterEach, describe, expect, it } from 'vitest';
import { serializeSigned } from '../../src/chain/ed25519.js';
import { buildSignedTransaction } from '../../src/chain/transaction.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { findWallet, walletSigner } from '../../src/funding/wallets.js';
import { onPostgres } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const SOL = 1_000_000_000;
const WRITE = ['launches:write', 'launches:read'] as const;

interface Funding {
  address: string;
  balanceLamports: string;
  reservedLamports: string;
  availableLamports: string;
  limits: Record<string, string | number | null>;
  spentTodayLamports: string;
  launchesToday: number;
  ledger: Array<{ kind: string; lamports: string; launchId: string | null; signature: string | null }>;
}

async function funding(key: string): Promise<Funding> {
  const res = await t!.request('/api/funding', { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { funding: Funding }).funding;
}

async function quote(key: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await t!.request('/api/launches/quote', { method: 'POST', key, json: body });
  expect(res.status).toBe(200);
  return ((await res.json()) as { quote: Record<string, any> }).quote;
}

const balanceOf = (address: string | PublicKey) => t!.service.chain.getBalance(typeof address === 'string' ? new PublicKey(address) : address);

describe('funding wallets', () => {
  it('pays a launch from its owner’s wallet only: the service payer and another owner are untouched, and the quote is what it spent', async () => {
    t = await startTestService();
    const acme = await t.key('acme', [...WRITE]);
    const other = await t.key('other', [...WRITE]);
    const mine = await funding(acme);
    const theirs = await funding(other);
    expect(mine.address).not.toBe(theirs.address);
    expect(mine.balanceLamports).toBe(String(100 * SOL));
    expect(mine.availableLamports).toBe(String(100 * SOL));

    const body = launchBody();
    const quoted = await quote(acme, body);
    expect(quoted.transactions).toBe(2);
    expect(quoted.signatures).toBe(3);
    expect(quoted.accounts.map((a: { role: string }) => a.role)).toEqual(['mint', 'creator_token_account']);
    expect(quoted.sufficient).toBe(true);
    expect(quoted.shortfallLamports).toBe('0');

    const payerBefore = await balanceOf(t.service.chain.payer.publicKey);
    const otherBefore = await balanceOf(theirs.address);
    const id = await t.createLaunch(acme, body);
    const reserved = await funding(acme);
    expect(reserved.reservedLamports).toBe(quoted.totalLamports);
    expect(Number(reserved.availableLamports)).toBe(100 * SOL - Number(quoted.totalLamports));
    expect(await t.service.runner.drain()).toBe(1);

    const launch = (await (await t.request(`/api/launches/${id}`, { key: acme })).json()) as { launch: { status: string } };
    expect(launch.launch.status).toBe('complete');
    expect(await balanceOf(t.service.chain.payer.publicKey)).toBe(payerBefore);
    expect(await balanceOf(theirs.address)).toBe(otherBefore);

    const after = await funding(acme);
    const spent = 100 * SOL - Number(after.balanceLamports);
    // The embedded chain charges no priority fee: the quote is exact.
    expect(spent).toBe(Number(quoted.totalLamports));
    expect(after.reservedLamports).toBe('0');
    expect(after.availableLamports).toBe(after.balanceLamports);
    const kinds = after.ledger.filter((e) => e.launchId === id).map((e) => e.kind).reverse();
    expect(kinds).toEqual(['reserve', 'spend', 'spend', 'release']);
    const spends = after.ledger.filter((e) => e.kind === 'spend').reduce((n, e) => n + Number(e.lamports), 0);
    expect(spends).toBe(spent);
    expect(after.ledger.find((e) => e.kind === 'release')!.lamports).toBe('0');
    expect(after.launchesToday).toBe(1);
    expect(after.spentTodayLamports).toBe(String(spent));
  });

  it('refuses a launch its wallet cannot cover with 402, queueing and sending nothing', async () => {
    t = await startTestService({ env: { FUNDING_DEV_AIRDROP: '0.002' } });
    const acme = await t.key('acme', [...WRITE]);
    const before = await funding(acme);
    expect(before.balanceLamports).toBe(String(2_000_000));
    const quoted = await quote(acme, launchBody());
    expect(quoted.sufficient).toBe(false);
    expect(Number(quoted.shortfallLamports)).toBe(Number(quoted.totalLamports) - 2_000_000);

    const res = await t.request('/api/launches', { method: 'POST', key: acme, json: launchBody(), headers: { 'idempotency-key': 'k-402' } });
    expect(res.status).toBe(402);
    const body = (await res.json()) as { error: { code: string; details: Record<string, string> } };
    expect(body.error.code).toBe('insufficient_funds');
    expect(body.error.details).toEqual({ requiredLamports: quoted.totalLamports, availableLamports: '2000000', address: before.address });
    expect(await t.service.db.selectFrom('launches').select('id').execute()).toEqual([]);
    expect(await t.service.db.selectFrom('outbox_events').select('id').execute()).toEqual([]);
    expect(await t.service.db.selectFrom('funding_ledger').select('id').execute()).toEqual([]);
    expect(await balanceOf(before.address)).toBe(2_000_000);
  });

  it('never reserves more than is available under 40 concurrent creates', async () => {
    t = await startTestService({ env: { FUNDING_DEV_AIRDROP: '0' } });
    const acme = await t.key('acme', [...WRITE]);
    const { address } = await funding(acme);
    const total = Number((await quote(acme, launchBody())).totalLamports);
    await t.service.chain.requestAirdrop!(new PublicKey(address), BigInt(total * 7 + Math.floor(total / 2)));
    const answers = await Promise.all(Array.from({ length: 40 }, () => t!.request('/api/launches', { method: 'POST', key: acme, json: launchBody() })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(7);
    expect(statuses.filter((s) => s === 402)).toHaveLength(33);
    const now = await funding(acme);
    expect(Number(now.reservedLamports)).toBe(7 * total);
    expect(Number(now.reservedLamports)).toBeLessThanOrEqual(Number(now.balanceLamports));
  });

  it('fails a launch whose wallet was emptied behind its back, and closes its reservation', async () => {
    t = await startTestService();
    const acme = await t.key('acme', [...WRITE]);
    const { address } = await funding(acme);
    const id = await t.createLaunch(acme);
    // Move everything out with the wallet's own key, as a thief with the seed would.
    const row = (await findWallet(t.service.db, 'acme'))!;
    const signer = walletSigner(createSecretBox(t.config.secretKey), row);
    const chain = t.service.chain;
    const balance = await balanceOf(address);
    const tx = buildSignedTransaction(chain, signer, [SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: balance - 5000 })], [], await chain.getLatestBlockhash());
    await chain.sendRawTransaction(serializeSigned(tx));
    expect(await balanceOf(address)).toBe(0);

    await t.service.runner.drain();
    const launch = (await (await t.request(`/api/launches/${id}`, { key: acme })).json()) as { launch: { status: string; error: { code: string } } };
    expect(launch.launch.status).toBe('failed');
    expect(launch.launch.error.code).toBe('insufficient_balance');
    const after = await funding(acme);
    expect(after.reservedLamports).toBe('0');
    const release = after.ledger.find((e) => e.kind === 'release' && e.launchId === id)!;
    const reserve = after.ledger.find((e) => e.kind === 'reserve' && e.launchId === id)!;
    expect(release.lamports).toBe(reserve.lamports);
  });

  it('applies an owner’s limits, saying which and when it resets', async () => {
    t = await startTestService();
    const admin = await t.key('ops', ['admin']);
    const acme = await t.key('acme', [...WRITE]);
    expect((await t.request('/api/funding/acme/limits', { method: 'PUT', key: acme, json: { maxLaunchesPerDay: 1 } })).status).toBe(403);
    const bad = await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLaunchesPerDay: -1, maxSol: 3 } });
    expect(bad.status).toBe(400);
    const set = await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLaunchesPerDay: 1, lowBalanceLamports: '5000000' } });
    expect(set.status).toBe(200);
    expect(((await set.json()) as { limits: unknown }).limits).toEqual({ maxLamportsPerLaunch: null, maxLamportsPerDay: null, maxLaunchesPerDay: 1, lowBalanceLamports: '5000000' });

    await t.createLaunch(acme);
    const refused = await t.request('/api/launches', { method: 'POST', key: acme, json: launchBody() });
    expect(refused.status).toBe(403);
    const error = ((await refused.json()) as { error: { code: string; details: Record<string, string> } }).error;
    expect(error.code).toBe('funding_limit_exceeded');
    expect(error.details.limit).toBe('maxLaunchesPerDay');
    expect(error.details.max).toBe('1');
    expect(new Date(error.details.resetsAt!).getTime() % 86_400_000).toBe(0);

    await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLaunchesPerDay: null, maxLamportsPerLaunch: '1000' } });
    const perLaunch = await t.request('/api/launches', { method: 'POST', key: acme, json: launchBody() });
    expect(perLaunch.status).toBe(403);
    expect(((await perLaunch.json()) as { error: { details: { limit: string } } }).error.details.limit).toBe('maxLamportsPerLaunch');
    expect((await funding(acme)).limits.maxLamportsPerLaunch).toBe('1000');
  });
});

describe('the operator fee', () => {
  it('charges LAUNCH_FEE_LAMPORTS to its recipient in the launch’s first transaction, in the quote and the reservation', async () => {
    const recipient = Keypair.generate().publicKey.toBase58();
    t = await startTestService({ env: { LAUNCH_FEE_LAMPORTS: '25000000', LAUNCH_FEE_RECIPIENT: recipient } });
    const acme = await t.key('acme', [...WRITE]);
    const quoted = await quote(acme, launchBody());
    expect(quoted.operatorFeeLamports).toBe('25000000');
    const id = await t.createLaunch(acme);
    await t.service.runner.drain();
    const launch = (await (await t.request(`/api/launches/${id}`, { key: acme })).json()) as { launch: { status: string; operatorFee: unknown; steps: Array<{ transactions: Array<{ signature: string }> }> } };
    expect(launch.launch.status).toBe('complete');
    expect(launch.launch.operatorFee).toEqual({ lamports: '25000000', recipient });
    expect(await balanceOf(recipient)).toBe(25_000_000);
    // Paid in the mint's transaction, by the owner's wallet.
    const first = await t.service.chain.history.getTransaction(launch.launch.steps[0]!.transactions[0]!.signature);
    expect(first!.accountKeys).toContain(recipient);
    const after = await funding(acme);
    expect(100 * SOL - Number(after.balanceLamports)).toBe(Number(quoted.totalLamports));
  });

  it('refuses to start with a fee and no valid recipient', async () => {
    await expect(startTestService({ env: { LAUNCH_FEE_LAMPORTS: '1000', LAUNCH_FEE_RECIPIENT: 'nobody' } })).rejects.toThrow(/LAUNCH_FEE_RECIPIENT/);
  });
});

describe('withdrawals', () => {
  it('needs funds:withdraw, which admin does not imply', async () => {
    t = await startTestService();
    const to = Keypair.generate().publicKey.toBase58();
    for (const scopes of [['launches:write', 'launches:read'], ['admin']] as const) {
      const key = await t.key('acme', [...scopes]);
      const res = await t.request('/api/funding/withdraw', { method: 'POST', key, json: { to, lamports: '1000000' } });
      expect(res.status).toBe(403);
    }
    expect(await balanceOf(to)).toBe(0);
  });

  it('refuses to uncover a reservation, and sends exactly once per Idempotency-Key', async () => {
    t = await startTestService({ env: { FUNDING_DEV_AIRDROP: '1' } });
    const acme = await t.key('acme', [...WRITE, 'funds:withdraw']);
    const { address } = await funding(acme);
    await t.createLaunch(acme);
    const held = Number((await funding(acme)).reservedLamports);
    const to = Keypair.generate().publicKey.toBase58();

    const tooMuch = await t.request('/api/funding/withdraw', { method: 'POST', key: acme, json: { to, lamports: String(SOL - held) } });
    expect(tooMuch.status).toBe(409);
    expect(((await tooMuch.json()) as { error: { code: string } }).error.code).toBe('funds_reserved');

    const invalid = await t.request('/api/funding/withdraw', { method: 'POST', key: acme, json: { to: 'nope', lamports: '-1' } });
    expect(invalid.status).toBe(400);

    const ask = () => t!.request('/api/funding/withdraw', { method: 'POST', key: acme, json: { to, lamports: '250000000' }, headers: { 'idempotency-key': 'w-1' } });
    const first = await ask();
    expect(first.status).toBe(200);
    const withdrawal = ((await first.json()) as { withdrawal: { signature: string; lamports: string; to: string } }).withdrawal;
    expect(withdrawal).toMatchObject({ lamports: '250000000', to });
    const again = await ask();
    expect(again.status).toBe(200);
    expect(((await again.json()) as { withdrawal: unknown }).withdrawal).toEqual(withdrawal);
    expect(await balanceOf(to)).toBe(250_000_000);
    expect(await balanceOf(address)).toBe(SOL - 250_000_000 - 5000);

    const reused = await t.request('/api/funding/withdraw', { method: 'POST', key: acme, json: { to, lamports: '1' }, headers: { 'idempotency-key': 'w-1' } });
    expect(reused.status).toBe(422);
    const ledger = await funding(acme);
    expect(ledger.ledger.filter((e) => e.kind === 'withdraw').map((e) => e.signature)).toEqual([withdrawal.signature]);
  });

  it('never lets one owner’s key see or move another owner’s funds', async () => {
    t = await startTestService();
    const a = await t.key('a', [...WRITE, 'funds:withdraw']);
    const b = await t.key('b', [...WRITE, 'funds:withdraw']);
    const fa = await funding(a);
    const fb = await funding(b);
    expect(fa.address).not.toBe(fb.address);
    await t.createLaunch(a);
    // B sees only its own ledger, and its withdrawal comes from its own wallet.
    const ledgerB = (await (await t.request('/api/funding/ledger', { key: b })).json()) as { entries: unknown[] };
    expect(ledgerB.entries).toEqual([]);
    const to = Keypair.generate().publicKey.toBase58();
    expect((await t.request('/api/funding/withdraw', { method: 'POST', key: b, json: { to, lamports: '1000000' } })).status).toBe(200);
    expect(await balanceOf(fa.address)).toBe(100 * SOL);
    expect(await balanceOf(fb.address)).toBe(100 * SOL - 1_000_000 - 5000);
    // Limits of another owner are the admin's alone.
    expect((await t.request('/api/funding/a/limits', { method: 'PUT', key: b, json: { maxLaunchesPerDay: 0 } })).status).toBe(403);
    // The launch of A is invisible to B, and so is its reservation.
    expect((await funding(b)).reservedLamports).toBe('0');
  });
});

describe('SECRET_KEY rotation', () => {
  // SQLite only: the embedded chain's state must survive the restart, and on PostgreSQL each test
  // service keeps its chain in a file of its own. The re-seal itself is the same SQL on both.
  it.skipIf(onPostgres)('re-seals every wallet under the new key and keeps its keypair, so the wallet still pays', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'launch-rotate-'));
    const oldKey = randomBytes(32).toString('base64');
    const newKey = randomBytes(32).toString('base64');
    try {
      t = await startTestService({ env: { DATA_DIR: dataDir, SECRET_KEY: oldKey } });
      const before = await funding(await t.key('acme', [...WRITE]));
      const sealed = (await findWallet(t.service.db, 'acme'))!.seed_enc;
      const first = t;
      t = undefined;
      await first.close();

      t = await startTestService({ env: { DATA_DIR: dataDir, SECRET_KEY: newKey, SECRET_KEY_PREVIOUS: oldKey } });
      const row = (await findWallet(t.service.db, 'acme'))!;
      expect(row.seed_enc).not.toBe(sealed);
      expect(() => createSecretBox(Buffer.from(oldKey, 'base64')).open(row.seed_enc)).toThrow();
      const key = await t.key('acme', [...WRITE]);
      const after = await funding(key);
      expect(after.address).toBe(before.address);
      expect(after.balanceLamports).toBe(before.balanceLamports);
      const id = await t.createLaunch(key);
      await t.service.runner.drain();
      const launch = (await (await t.request(`/api/launches/${id}`, { key })).json()) as { launch: { status: string } };
      expect(launch.launch.status).toBe('complete');
      expect(Number((await funding(key)).balanceLamports)).toBeLessThan(Number(before.balanceLamports));
    } finally {
      const last = t;
      t = undefined;
      await last?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
