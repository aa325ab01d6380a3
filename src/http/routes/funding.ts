import { PublicKey } from '@solana/web3.js';
import { Hono } from 'hono';
import type { Db } from '../../db/database.js';
import type { Funding, FundingLimits } from '../../funding/funding.js';
import { MAX_LIMIT_LAMPORTS } from '../../funding/limits.js';
import { listEntries, presentEntry } from '../../funding/ledger.js';
import { invalidRequest } from '../errors.js';
import type { AppEnv } from '../env.js';
import { readJson } from '../middleware/bodyGuards.js';
import { requireScope } from '../middleware/auth.js';
import { paginationBlock, readPage } from '../pagination.js';

export interface FundingRouteDeps {
  db: Db;
  funding: Pick<Funding, 'account' | 'setLimits' | 'withdraw'>;
  /** Hashes a request body for the Idempotency-Key check (launches/idempotency requestHash). */
  hashBody(body: unknown): string;
}

const LIMIT_FIELDS = ['maxLamportsPerLaunch', 'maxLamportsPerDay', 'maxLaunchesPerDay', 'lowBalanceLamports'] as const;
const OWNER = /^[A-Za-z0-9._:@-]{1,100}$/;
const LAMPORTS = /^[0-9]{1,20}$/;
/** The largest amount a transfer instruction carries (u64). */
const U64_MAX = 2n ** 64n - 1n;

/** `GET /funding`, `GET /funding/ledger`, `PUT /funding/:owner/limits`, `POST /funding/withdraw` (docs/api.md, "Funding"). */
export function createFundingRoutes(deps: FundingRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const page = readPage((n) => c.req.query(n), { defaultLimit: 10, maxLimit: 10 });
    const funding = await deps.funding.account(auth.owner);
    const recent = await listEntries(deps.db, auth.owner, { limit: page.limit, offset: 0 });
    return c.json({ funding: { ...funding, ledger: recent.rows.map(presentEntry) } });
  });

  app.get('/ledger', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const page = readPage((n) => c.req.query(n), { defaultLimit: 50, maxLimit: 200 });
    const { rows, total } = await listEntries(deps.db, auth.owner, page);
    return c.json({ entries: rows.map(presentEntry), pagination: paginationBlock(page, rows.length, total) });
  });

  app.put('/:owner/limits', async (c) => {
    requireScope(c, 'admin');
    const owner = c.req.param('owner');
    if (!OWNER.test(owner)) throw invalidRequest('owner must be 1 to 100 letters, digits or ._:@-', { fields: [{ field: 'owner', message: 'invalid' }] });
    const limits = readLimits(await readJson(c));
    return c.json({ limits: presentLimits(await deps.funding.setLimits(owner, limits)) });
  });

  app.post('/withdraw', async (c) => {
    const auth = requireScope(c, 'funds:withdraw');
    const body = await readJson(c);
    const fields: Array<{ field: string; message: string }> = [];
    const raw = (body ?? {}) as Record<string, unknown>;
    let to: PublicKey | undefined;
    try {
      if (typeof raw.to !== 'string') throw new Error('missing');
      to = new PublicKey(raw.to);
    } catch {
      fields.push({ field: 'to', message: 'must be a base58 public key' });
    }
    // Exact: a bigint from the decimal string, never a JS number (2^53 and above would round).
    const lamports = typeof raw.lamports === 'string' && LAMPORTS.test(raw.lamports) && BigInt(raw.lamports) > 0n && BigInt(raw.lamports) <= U64_MAX ? BigInt(raw.lamports) : undefined;
    if (lamports === undefined) fields.push({ field: 'lamports', message: `must be a positive decimal string of lamports, at most ${U64_MAX}` });
    const extra = Object.keys(raw).filter((k) => k !== 'to' && k !== 'lamports');
    for (const k of extra) fields.push({ field: k, message: 'unknown field' });
    if (typeof body !== 'object' || body === null || Array.isArray(body) || fields.length > 0 || !to || lamports === undefined) {
      throw invalidRequest('The withdrawal request is invalid', { fields });
    }
    const key = c.req.header('idempotency-key');
    if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw invalidRequest('Idempotency-Key must be 1 to 255 printable characters', { fields: [{ field: 'Idempotency-Key', message: 'invalid' }] });
    }
    const withdrawal = await deps.funding.withdraw(auth.owner, { to, lamports, idempotencyKey: key, requestHash: key === undefined ? undefined : deps.hashBody(body) });
    return c.json({ withdrawal });
  });

  return app;
}

/** The limits a `PUT` names: lamports as decimal strings, launches as an integer, `null` to clear. */
function readLimits(body: unknown): Partial<FundingLimits> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The body must be a JSON object of limits');
  const raw = body as Record<string, unknown>;
  const fields: Array<{ field: string; message: string }> = [];
  const limits: Partial<FundingLimits> = {};
  for (const key of Object.keys(raw)) {
    if (!(LIMIT_FIELDS as readonly string[]).includes(key)) fields.push({ field: key, message: `unknown limit; one of ${LIMIT_FIELDS.join(', ')}` });
  }
  for (const field of LIMIT_FIELDS) {
    if (!(field in raw)) continue;
    const value = raw[field];
    if (value === null) limits[field] = null;
    else if (field === 'maxLaunchesPerDay' && typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 1_000_000) limits[field] = value;
    else if (field !== 'maxLaunchesPerDay' && typeof value === 'string' && /^[0-9]{1,19}$/.test(value) && BigInt(value) <= MAX_LIMIT_LAMPORTS) limits[field] = BigInt(value);
    else fields.push({ field, message: field === 'maxLaunchesPerDay' ? 'must be an integer from 0 to 1000000, or null' : `must be a decimal string of lamports up to ${MAX_LIMIT_LAMPORTS}, or null` });
  }
  if (fields.length > 0) throw invalidRequest('The limits are invalid', { fields });
  if (Object.keys(limits).length === 0) throw invalidRequest(`Name at least one limit: ${LIMIT_FIELDS.join(', ')}`);
  return limits;
}

export function presentLimits(limits: FundingLimits): Record<string, unknown> {
  const amount = (v: bigint | null) => (v === null ? null : String(v));
  return {
    maxLamportsPerLaunch: amount(limits.maxLamportsPerLaunch),
    maxLamportsPerDay: amount(limits.maxLamportsPerDay),
    maxLaunchesPerDay: limits.maxLaunchesPerDay,
    lowBalanceLamports: amount(limits.lowBalanceLamports),
  };
}
