import { Keypair, PublicKey, SYSVAR_CLOCK_PUBKEY } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { insertEntry } from '../../src/funding/ledger.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const SOL = 1_000_000_000;
const FEE = 5000;
const balanceOf = (address: string) => t!.service.chain.getBalance(new PublicKey(address));

async function walletOf(key: string): Promise<string> {
  const res = await t!.request('/api/funding', { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { funding: { address: string } }).funding.address;
}

/** A withdrawal through the API; a `withdrawal_in_progress` answer is retried, as a client would. */
async function withdraw(key: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Response> {
  for (;;) {
    const res = await t!.request('/api/funding/withdraw', { method: 'POST', key, json: body, headers: { 'idempotency-key': idempotencyKey } });
    if (res.status !== 409) return res;
    const error = ((await res.clone().json()) as { error: { code: string } }).error;
    if (error.code !== 'withdrawal_in_progress') return res;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('identical withdrawals', () => {
  it('sends ten concurrent identical withdrawals as ten transfers, with ten entries and ten events', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:read', 'funds:withdraw']);
    const wallet = await walletOf(key);
    const to = Keypair.generate().publicKey.toBase58();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => withdraw(key, { to, lamports: String(3 * SOL) }, `same-${i}`)));
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: 10 }, () => 200));
    const signatures = await Promise.all(answers.map(async (r) => ((await r.json()) as { withdrawal: { signature: string } }).withdrawal.signature));
    expect(new Set(signatures).size).toBe(10);

    expect(await balanceOf(to)).toBe(30 * SOL);
    expect(await balanceOf(wallet)).toBe(100 * SOL - 30 * SOL - 10 * FEE);
    const entries = await t.service.db.selectFrom('funding_ledger').select(['signature', 'lamports']).where('kind', '=', 'withdraw').execute();
    expect(entries).toHaveLength(10);
    expect(new Set(entries.map((e) => e.signature))).toEqual(new Set(signatures));
    const events = await t.service.db.selectFrom('outbox_events').select('body').where('event', '=', 'funding.withdrawn').execute();
    expect(new Set(events.map((e) => (JSON.parse(e.body) as { data: { signature: string } }).data.signature))).toEqual(new Set(signatures));
    expect(events).toHaveLength(10);
  });

  it('sends five back-to-back identical withdrawals as five transfers', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:read', 'funds:withdraw']);
    const wallet = await walletOf(key);
    const to = Keypair.generate().publicKey.toBase58();
    const signatures: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await withdraw(key, { to, lamports: String(SOL) }, `b2b-${i}`);
      expect(res.status).toBe(200);
      signatures.push(((await res.json()) as { withdrawal: { signature: string } }).withdrawal.signature);
    }
    expect(new Set(signatures).size).toBe(5);
    expect(await balanceOf(to)).toBe(5 * SOL);
    expect(await balanceOf(wallet)).toBe(95 * SOL - 5 * FEE);
  });
});

describe('withdrawal destinations and fees', () => {
  it('refuses a sysvar, a program, a builtin and a new account below rent with 400 naming `to`, before signing', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:read', 'funds:withdraw']);
    const wallet = await walletOf(key);
    const fresh = Keypair.generate().publicKey.toBase58();
    const tokenProgramBefore = await balanceOf(TOKEN_PROGRAM_ID.toBase58());
    const cases: Array<[string, string, RegExp]> = [
      [SYSVAR_CLOCK_PUBKEY.toBase58(), String(SOL), /is a sysvar/],
      [TOKEN_PROGRAM_ID.toBase58(), String(SOL), /executable account/],
      ['11111111111111111111111111111111', String(SOL), /builtin program/],
      [fresh, '1000', /below the \d+ a new account needs/],
    ];
    for (const [to, lamports, reason] of cases) {
      const res = await t.request('/api/funding/withdraw', { method: 'POST', key, json: { to, lamports } });
      expect(res.status).toBe(400);
      expect(res.headers.get('retry-after')).toBeNull();
      const error = ((await res.json()) as { error: { code: string; message: string; details: { fields: Array<{ field: string; message: string }> } } }).error;
      expect(error.code).toBe('invalid_destination');
      expect(error.message).toContain(to);
      expect(error.message).toMatch(reason);
      expect(error.details.fields[0]!.field).toBe('to');
    }
    // Nothing was signed: the wallet paid no fee and the ledger is empty.
    expect(await balanceOf(wallet)).toBe(100 * SOL);
    expect(await t.service.db.selectFrom('funding_ledger').select('id').execute()).toEqual([]);
    expect(await balanceOf(TOKEN_PROGRAM_ID.toBase58())).toBe(tokenProgramBefore);
  });

  it('records each withdrawal’s fee, so the ledger adds up to what left the wallet', async () => {
    t = await startTestService();
    const key = await t.key('acme', ['launches:read', 'funds:withdraw']);
    const wallet = await walletOf(key);
    for (const [i, lamports] of [SOL, 2 * SOL].entries()) {
      expect((await withdraw(key, { to: Keypair.generate().publicKey.toBase58(), lamports: String(lamports) }, `fee-${i}`)).status).toBe(200);
    }
    const ledger = ((await (await t.request('/api/funding/ledger', { key })).json()) as { entries: Array<{ kind: string; lamports: string; feeLamports: string | null }> }).entries;
    expect(ledger.map((e) => [e.kind, e.feeLamports])).toEqual([['withdraw', String(FEE)], ['withdraw', String(FEE)]]);
    const out = ledger.reduce((n, e) => n + BigInt(e.lamports) + BigInt(e.feeLamports ?? 0), 0n);
    expect(out).toBe(BigInt(100 * SOL - (await balanceOf(wallet))));
  });

  it('refuses a second ledger entry for one signature of an owner', async () => {
    t = await startTestService();
    const db = t.service.db;
    const signature = '5'.repeat(64);
    await insertEntry(db, { owner: 'acme', kind: 'withdraw', lamports: 1, signature, now: Date.now() });
    await expect(insertEntry(db, { owner: 'acme', kind: 'withdraw', lamports: 1, signature, now: Date.now() })).rejects.toThrow(/unique|duplicate/i);
    // Another owner's entry for the same transaction (its deposit, say) is its own.
    await insertEntry(db, { owner: 'other', kind: 'deposit', lamports: 1, signature, now: Date.now() });
    expect(await db.selectFrom('funding_ledger').select('id').where('signature', '=', signature).execute()).toHaveLength(2);
  });
});

describe('limits of an owner that does not exist', () => {
  it('answers 404 for an owner with no key and no wallet, making no wallet and airdropping nothing', async () => {
    t = await startTestService();
    const admin = await t.key('ops', ['admin']);
    const res = await t.request('/api/funding/ghost/limits', { method: 'PUT', key: admin, json: { maxLaunchesPerDay: 3 } });
    expect(res.status).toBe(404);
    const error = ((await res.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('not_found');
    expect(error.message).toContain('ghost');
    expect(await t.service.db.selectFrom('funding_wallets').select('owner').execute()).toEqual([]);
    // An owner with a key (and no wallet yet) gets its wallet and its limits.
    await t.key('acme', ['launches:read']);
    const set = await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLaunchesPerDay: 3 } });
    expect(set.status).toBe(200);
    expect((await t.service.db.selectFrom('funding_wallets').select('owner').execute()).map((r) => r.owner)).toEqual(['acme']);
  });
});

describe('exact lamports', () => {
  it('stores and returns a limit above 2^53 exactly, and refuses one above 2^63 − 1', async () => {
    t = await startTestService();
    const admin = await t.key('ops', ['admin']);
    const acme = await t.key('acme', ['launches:read']);
    const big = '9007199254740993';
    const set = await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLamportsPerLaunch: big, lowBalanceLamports: '9223372036854775807' } });
    expect(set.status).toBe(200);
    expect(((await set.json()) as { limits: Record<string, unknown> }).limits).toMatchObject({ maxLamportsPerLaunch: big, lowBalanceLamports: '9223372036854775807' });
    const shown = ((await (await t.request('/api/funding', { key: acme })).json()) as { funding: { limits: Record<string, unknown> } }).funding.limits;
    expect(shown).toMatchObject({ maxLamportsPerLaunch: big, lowBalanceLamports: '9223372036854775807' });
    const tooBig = await t.request('/api/funding/acme/limits', { method: 'PUT', key: admin, json: { maxLamportsPerDay: '9223372036854775808' } });
    expect(tooBig.status).toBe(400);
  });

  it('returns ledger amounts above 2^53 exactly, in the ledger and the funding summary', async () => {
    t = await startTestService();
    const acme = await t.key('acme', ['launches:read']);
    const lamports = 9007199254740993n;
    const fee = 9007199254740995n;
    await insertEntry(t.service.db, { owner: 'acme', kind: 'withdraw', lamports, feeLamports: fee, signature: '4'.repeat(64), now: Date.now() });
    const entries = ((await (await t.request('/api/funding/ledger', { key: acme })).json()) as { entries: Array<{ lamports: string; feeLamports: string }> }).entries;
    expect(entries.map((e) => [e.lamports, e.feeLamports])).toEqual([[String(lamports), String(fee)]]);
    const recent = ((await (await t.request('/api/funding', { key: acme })).json()) as { funding: { ledger: Array<{ lamports: string }> } }).funding.ledger;
    expect(recent.map((e) => e.lamports)).toEqual([String(lamports)]);
  });
});
