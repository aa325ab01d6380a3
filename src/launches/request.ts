import { PublicKey } from '@solana/web3.js';
import { z } from 'zod';
import { destinationProblem } from '../webhooks/addressPolicy.js';
import { chainLimitProblems } from './chainLimits.js';

const U64_MAX = 2n ** 64n - 1n;
export const WSOL_MINT = 'So11111111111111111111111111111111111111112';

const pubkey = z.string().refine(isPubkey, { message: 'must be a base58 Solana public key' });
const wholeAmount = z
  .union([z.string(), z.number()])
  .refine((v) => (typeof v === 'number' ? Number.isSafeInteger(v) && v > 0 : /^[1-9]\d{0,19}$/.test(v)), {
    message: 'must be a positive whole number, as a decimal string or a safe integer',
  })
  .transform((v) => BigInt(v));
const percent = z.number().int('must be a whole percent').min(0).max(100);

// Text a wallet shows must be shown honestly: no C0/C1 controls, no bidirectional embeddings,
// overrides, isolates or marks (which reorder what the reader sees), no line/paragraph separators.
const HIDDEN_CHARACTERS = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/u;

const LONE_SURROGATE = /\p{Cs}/u;

/** Why `value` cannot go on chain as display text, or undefined. */
export function textProblem(value: string): string | undefined {
  // A lone surrogate has no UTF-8 encoding: the program would receive U+FFFD or reject the string.
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (it contains a lone surrogate)';
  const hidden = HIDDEN_CHARACTERS.exec(value);
  if (hidden) return `must not contain control or bidirectional formatting characters (U+${hidden[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`;
  return undefined;
}

/** A trimmed, non-empty display string of at most `maxBytes` UTF-8 bytes (an on-chain limit). */
const chainText = (maxBytes: number, limit: string) =>
  z
    .string()
    .superRefine((v, ctx) => {
      const problem = textProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .transform((v) => v.trim())
    .refine((v) => v.length > 0, { message: 'must not be empty' })
    .refine((v) => Buffer.byteLength(v, 'utf8') <= maxBytes, { message: `must be at most ${maxBytes} bytes in UTF-8 (${limit})` });

/** Schemes a wallet fetches token metadata from. */
const URI_SCHEMES = ['https:', 'ipfs:', 'ar:'];

/** A decimal amount of SOL: positive, at most 9 decimals. */
const solAmount = z.string().regex(/^(?=.*[1-9])\d{1,12}(\.\d{1,9})?$/, 'must be a positive decimal string of SOL, at most 9 decimals');
const quoteMint = z.literal(WSOL_MINT, { message: `only SOL (${WSOL_MINT}) is supported as the quote mint` });

/** `pool.kind: "cpmm"` (the default): a Raydium CPMM pool seeded with the pool allocation. */
const cpmmPoolSchema = z.strictObject({
  kind: z.literal('cpmm').optional(),
  quoteMint,
  quoteAmount: solAmount,
});

/** `pool.kind: "bonding-curve"`: a Meteora Dynamic Bonding Curve that graduates to DAMM v2 (docs/programs.md). */
const curvePoolSchema = z.strictObject({
  kind: z.literal('bonding-curve'),
  quoteMint,
  initialMarketCap: solAmount,
  graduationMarketCap: solAmount,
  graduationSupplyPercent: z.number().int('must be a whole percent').min(1).max(90).default(20),
  tradingFeeBps: z.number().int('must be a whole number of basis points').min(25).max(1000).default(100),
  creatorFeePercent: z.number().int('must be a whole percent').min(0).max(100).default(50),
  antiSniping: z.boolean().default(false),
  firstBuy: z.strictObject({ quoteAmount: solAmount }).optional(),
});

const poolSchema = z.discriminatedUnion('kind', [cpmmPoolSchema, curvePoolSchema], {
  error: (issue) => (issue.code === 'invalid_union' ? 'must be "cpmm" (the default) or "bonding-curve"' : undefined),
});

function isCurvePool(pool: unknown): pool is z.output<typeof curvePoolSchema> {
  return typeof pool === 'object' && pool !== null && (pool as { kind?: unknown }).kind === 'bonding-curve';
}

/** Allocations when the request names none: everything to the creator, or to the curve on a bonding-curve launch. */
function defaultAllocations(pool: unknown): { creator: number; vesting: number; treasury: number; pool: number } {
  return isCurvePool(pool) ? { creator: 0, vesting: 0, treasury: 0, pool: 100 } : { creator: 100, vesting: 0, treasury: 0, pool: 0 };
}

/** What a bonding-curve launch may ask for beyond its pool section's own fields. */
function curveRequestRules(req: { pool?: unknown; allocations?: Record<string, number> | undefined; decimals?: unknown; dao?: unknown; vesting?: unknown }, ctx: z.RefinementCtx): void {
  const pool = req.pool as z.output<typeof curvePoolSchema>;
  for (const kind of ['creator', 'treasury'] as const) {
    const share = req.allocations?.[kind];
    if (typeof share === 'number' && share > 0) {
      ctx.addIssue({ code: 'custom', path: ['allocations', kind], message: 'must be 0 on a bonding-curve launch: the curve mints the supply, so allocations may name only pool and vesting' });
    }
  }
  const cliffUnlockPercent = (req.vesting as { cliffUnlockPercent?: unknown } | undefined)?.cliffUnlockPercent;
  if (typeof cliffUnlockPercent === 'number' && cliffUnlockPercent > 0) {
    ctx.addIssue({ code: 'custom', path: ['vesting', 'cliffUnlockPercent'], message: 'is not built yet for bonding-curve launches (the curve\'s locked vesting unlocks nothing at its cliff): leave it out or 0' });
  }
  if (typeof req.decimals === 'number' && (req.decimals < 6 || req.decimals > 9)) {
    ctx.addIssue({ code: 'custom', path: ['decimals'], message: 'must be 6 to 9 on a bonding-curve launch (what the Dynamic Bonding Curve program supports)' });
  }
  const initial = typeof pool.initialMarketCap === 'string' ? Number(pool.initialMarketCap) : NaN;
  const graduation = typeof pool.graduationMarketCap === 'string' ? Number(pool.graduationMarketCap) : NaN;
  if (initial > 0 && graduation > 0 && !(graduation > initial)) {
    ctx.addIssue({ code: 'custom', path: ['pool', 'graduationMarketCap'], message: 'must be greater than pool.initialMarketCap' });
  }
}

/**
 * What a creator-signed bonding curve may ask for (docs/signing.md): the creator is the curve's DBC
 * creator, so only its own signature claims the curve's and the position's fees and hands its locked
 * vesting on. The service holds no key that could: fees go to the creator, who claims them, and
 * locked vesting stays with the creator. A DAO is not built for it yet.
 */
function creatorCurveRules(req: { fees?: { recipient?: unknown; autoClaimMinLamports?: unknown } | undefined; vesting?: { beneficiary?: unknown } | undefined; creator?: unknown; dao?: unknown }, ctx: z.RefinementCtx): void {
  const why = 'on a creator-signed bonding curve (signing "creator") the creator, the curve\'s DBC creator, claims its fees itself with its own signature';
  if (req.fees?.recipient !== undefined && req.fees.recipient !== 'creator') ctx.addIssue({ code: 'custom', path: ['fees', 'recipient'], message: `must be "creator": ${why}` });
  if (req.fees?.autoClaimMinLamports !== undefined) ctx.addIssue({ code: 'custom', path: ['fees', 'autoClaimMinLamports'], message: `is not available: ${why}, so the service cannot claim them` });
  if (req.vesting?.beneficiary !== undefined && req.vesting.beneficiary !== req.creator) {
    ctx.addIssue({ code: 'custom', path: ['vesting', 'beneficiary'], message: 'must be the creator on a creator-signed bonding curve: the locked vesting is the creator\'s, and only its signature could hand it on' });
  }
  if (req.dao !== undefined) ctx.addIssue({ code: 'custom', path: ['dao'], message: 'is not built yet for creator-signed bonding curves (signing "creator")' });
}

/** The launch request body (docs/api.md); strict: unknown fields are refused. */
export const launchRequestSchema = z
  .strictObject({
    name: chainText(32, 'on-chain metadata limit'),
    ticker: z.string().trim().min(1).max(10).regex(/^[A-Za-z0-9]+$/, 'must be letters and digits only'),
    totalSupply: wholeAmount,
    decimals: z.number().int().min(0).max(9).default(9),
    uri: z
      .string()
      .refine((v) => textProblem(v) === undefined && !/\s/.test(v), { message: 'must not contain spaces, control or bidirectional formatting characters' })
      .refine((v) => Buffer.byteLength(v, 'utf8') <= 200, { message: 'must be at most 200 bytes in UTF-8 (on-chain metadata limit)' })
      .refine((v) => v === '' || isMetadataUri(v), { message: 'must be an https://, ipfs:// or ar:// URL a wallet can fetch' })
      .default(''),
    tokenStandard: z.enum(['spl-token', 'token-2022']).default('token-2022'),
    creator: pubkey,
    allocations: z
      .strictObject({ creator: percent.default(0), vesting: percent.default(0), treasury: percent.default(0), pool: percent.default(0) })
      .optional(),
    vesting: z
      .strictObject({
        beneficiary: pubkey,
        cliffSeconds: z.number().int().min(0).max(10 * 365 * 86400),
        periodSeconds: z.number().int().min(1).max(10 * 365 * 86400),
        periods: z.number().int().min(1).max(100_000),
        // Jupiter Lock's cliff_unlock_amount, as a whole percent of the vesting allocation (like allocations).
        cliffUnlockPercent: percent.optional(),
      })
      .optional(),
    dao: z
      .strictObject({
        name: chainText(32, 'SPL Governance realm name: a PDA seed'),
        votingPeriodSeconds: z.number().int().min(3600).max(365 * 86400),
        quorumPercent: z.number().int().min(1).max(100),
      })
      .optional(),
    pool: poolSchema.optional(),
    fees: z
      .strictObject({
        recipient: z
          .string()
          .refine((v) => v === 'creator' || v === 'treasury' || isPubkey(v), { message: 'must be "creator", "treasury" or a base58 Solana public key' })
          .default('creator'),
        autoClaimMinLamports: z.string().regex(/^[1-9]\d{0,18}$/, 'must be a positive whole number of lamports, as a decimal string').optional(),
      })
      .optional(),
    revokeMintAuthority: z.boolean().default(false),
    // Who signs and pays (docs/signing.md): the owner's funding wallet, or the creator's own wallet.
    signing: z.enum(['service', 'creator']).default('service'),
    webhookUrl: z.string().max(2048).refine(isHttpUrl, { message: 'must be an absolute http(s) URL' }),
    webhookSecret: z.string().min(16, 'must be at least 16 characters').max(256),
  })
  .superRefine((req, ctx) => {
    // Zod runs this even when fields failed, on untransformed input: check only what parsed.
    const curve = isCurvePool(req.pool);
    if (curve) curveRequestRules(req, ctx);
    const a = req.allocations ?? defaultAllocations(req.pool);
    const shares = [a?.creator, a?.vesting, a?.treasury, a?.pool];
    if (!shares.every((n) => typeof n === 'number')) return;
    if (a.creator + a.vesting + a.treasury + a.pool !== 100) {
      ctx.addIssue({ code: 'custom', path: ['allocations'], message: 'must sum to 100' });
    }
    for (const [section, share] of [['vesting', a.vesting], ['dao', a.treasury], ['pool', a.pool]] as const) {
      // A bonding curve's DAO holds no allocation (the curve mints the supply): its realm governs the launched mint, its treasury receives fees.
      if (curve && section === 'dao') continue;
      const present = req[section] !== undefined;
      const allocation = section === 'dao' ? 'treasury' : section;
      if (present && share === 0) ctx.addIssue({ code: 'custom', path: [section], message: `requires a non-zero allocations.${allocation}` });
      if (!present && share > 0) ctx.addIssue({ code: 'custom', path: [section], message: `is required when allocations.${allocation} is non-zero` });
    }
    if (req.signing === 'creator' && curve) creatorCurveRules(req, ctx);
    if (req.dao && req.tokenStandard === 'token-2022') {
      ctx.addIssue({ code: 'custom', path: ['tokenStandard'], message: 'must be spl-token when dao is requested (SPL Governance rejects Token-2022 mints)' });
    }
    if (req.fees?.recipient === 'treasury' && req.dao === undefined) {
      ctx.addIssue({ code: 'custom', path: ['fees', 'recipient'], message: 'may be "treasury" only when dao is requested (the realm\'s native treasury receives the fees)' });
    }
    if (typeof req.totalSupply === 'bigint' && Number.isInteger(req.decimals) && req.decimals >= 0 && req.decimals <= 9 && req.totalSupply * 10n ** BigInt(req.decimals) > U64_MAX) {
      ctx.addIssue({ code: 'custom', path: ['totalSupply'], message: `times 10^decimals must fit in a u64 (max ${U64_MAX})` });
    }
  })
  .transform((req) => ({ ...req, allocations: req.allocations ?? defaultAllocations(req.pool) }));

export interface ParseOptions {
  /** Production: the webhook URL must be https. */
  requireHttps: boolean;
  /** The outbound guard is on: literal non-public addresses and local names are refused now, not at every attempt. */
  publicDestinationsOnly?: boolean;
}

export type LaunchRequest = z.output<typeof launchRequestSchema>;

export interface FieldError {
  field: string;
  message: string;
}

/** Validates a launch request; returns every bad field with a message. */
export function parseLaunchRequest(body: unknown, options: ParseOptions): { ok: true; value: LaunchRequest } | { ok: false; errors: FieldError[] } {
  // reportInput: only to tell a missing field from one of the wrong type; values are never echoed.
  const parsed = launchRequestSchema.safeParse(body, { reportInput: true });
  const errors: FieldError[] = parsed.success
    ? []
    : parsed.error.issues.map((issue) => ({ field: issue.path.length ? issue.path.join('.') : '(body)', message: describeIssue(issue) }));
  if (!parsed.success) return { ok: false, errors };
  const req = parsed.data;
  if (options.requireHttps && !req.webhookUrl.startsWith('https://')) errors.push({ field: 'webhookUrl', message: 'must use https in production' });
  const destination = options.publicDestinationsOnly ? destinationProblem(new URL(req.webhookUrl)) : undefined;
  if (destination) errors.push({ field: 'webhookUrl', message: destination });
  errors.push(...chainLimitProblems(req));
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: req };
}

/** A message for one schema issue that says what was expected, never echoing the value. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`;
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    if (issue.expected === 'int' && typeof issue.input === 'number') return 'must be a whole number';
    return `must be ${withArticle(issue.expected)}, not ${typeName(issue.input)}`;
  }
  if (issue.code === 'invalid_union') {
    const expected = [...new Set(issue.errors.flat().flatMap((sub) => (sub.code === 'invalid_type' ? [sub.expected] : [])))];
    if (issue.input === undefined) return 'is required';
    if (expected.length > 0) return `must be ${expected.map(withArticle).join(' or ')}, not ${typeName(issue.input)}`;
  }
  if (issue.code === 'invalid_value' && issue.input === undefined) return 'is required';
  // A message the schema spelled out is kept; zod's defaults ("Too big: expected number to be <=9")
  // become plain sentences.
  if (!/^(Too big|Too small|Invalid)/.test(issue.message)) return issue.message;
  return plainSentence(issue) ?? issue.message;
}

function plainSentence(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'too_big' || issue.code === 'too_small') {
    const bound = String(issue.code === 'too_big' ? issue.maximum : issue.minimum);
    const exact = issue.inclusive !== false;
    const words = issue.code === 'too_big' ? (exact ? 'at most' : 'less than') : exact ? 'at least' : 'more than';
    if (issue.origin === 'string') return `must be ${words} ${bound} character${bound === '1' ? '' : 's'} long`;
    if (issue.origin === 'array' || issue.origin === 'set') return `must have ${words} ${bound} item${bound === '1' ? '' : 's'}`;
    return `must be ${words} ${bound}`;
  }
  if (issue.code === 'invalid_value') return `must be one of ${issue.values.map(String).join(', ')}`;
  if (issue.code === 'invalid_format') return `must match the ${issue.format} format`;
  if (issue.code === 'not_multiple_of') return `must be a multiple of ${String(issue.divisor)}`;
  return undefined;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return withArticle(typeof value);
}

function withArticle(type: string): string {
  if (type === 'null' || type === 'undefined') return type;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** The stored form of a request: JSON-safe, without the webhook secret. */
export function storedRequest(req: LaunchRequest, operatorFee?: OperatorFee): Record<string, unknown> {
  const { webhookSecret: _secret, totalSupply, signing, ...rest } = req;
  const fee = operatorFee && operatorFee.lamports > 0 ? { operatorFee: { lamports: String(operatorFee.lamports), recipient: operatorFee.recipient } } : {};
  // `signing` is stored (and shown) only when the creator signs; the default stays implicit.
  return { ...rest, totalSupply: totalSupply.toString(), ...fee, ...(signing === 'creator' ? { signing } : {}) };
}

/**
 * The operator's fee per launch (`LAUNCH_FEE_LAMPORTS` to `LAUNCH_FEE_RECIPIENT`). Stored with the
 * launch when it is created (and shown in it), so a launch pays what its quote said even if the
 * configuration changes before it runs.
 */
export interface OperatorFee {
  lamports: number;
  recipient: string;
}

function isPubkey(value: string): boolean {
  if (value.length < 32 || value.length > 44) return false;
  try {
    return new PublicKey(value).toBase58() === value;
  } catch {
    return false;
  }
}

function isMetadataUri(value: string): boolean {
  try {
    const url = new URL(value);
    return URI_SCHEMES.includes(url.protocol) && (url.protocol !== 'https:' || url.hostname !== '') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}
