/** The OpenAPI paths of funding (docs/funding.md): the quote, the wallet, its ledger, limits and withdrawals; and an owner's bounds. */
import { OWNER_LIMIT_CEILINGS } from '../config/config.js';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string) => ({ description, content: { 'application/json': { schema } } });
const error = (description: string) => json(ref('Error'), description);
const bearer = [{ bearer: [] }];
const lamports = { type: 'string', pattern: '^[0-9]+$', description: 'lamports, as a decimal string' };
const nullableLamports = { type: ['string', 'null'], pattern: '^[0-9]+$' };

const limits = {
  type: 'object',
  properties: { maxLamportsPerLaunch: nullableLamports, maxLamportsPerDay: nullableLamports, maxLaunchesPerDay: { type: ['integer', 'null'], minimum: 0 }, lowBalanceLamports: nullableLamports },
};

const boundOverrides = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    endpoints: { type: ['integer', 'null'], minimum: 0, maximum: OWNER_LIMIT_CEILINGS.endpoints },
    launchesInFlight: { type: ['integer', 'null'], minimum: 0, maximum: OWNER_LIMIT_CEILINGS.launchesInFlight },
    redeliveries: { type: ['integer', 'null'], minimum: 0, maximum: OWNER_LIMIT_CEILINGS.redeliveries },
  },
};

const ownerBounds = {
  type: 'object',
  properties: {
    owner: { type: 'string' },
    endpoints: { type: 'integer', description: 'MAX_ENDPOINTS_PER_OWNER or the override' },
    launchesInFlight: { type: 'integer', description: 'MAX_LAUNCHES_IN_FLIGHT_PER_OWNER or the override' },
    redeliveries: { type: 'integer', description: 'MAX_REDELIVERIES_PER_DELIVERY or the override' },
    overrides: { ...boundOverrides, minProperties: 3, description: 'null: the configured default holds' },
  },
};

const entry = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    launchId: { type: ['string', 'null'] },
    kind: { enum: ['reserve', 'spend', 'release', 'withdraw', 'deposit', 'fee'], description: 'fee: the fee of a withdrawal that failed on chain' },
    lamports,
    feeLamports: { ...nullableLamports, description: 'a withdrawal’s fee, paid besides lamports; null for other entries (a spend’s lamports include its fees)' },
    signature: { type: ['string', 'null'] },
    at: { type: 'string', format: 'date-time' },
  },
};

const funding = {
  type: 'object',
  properties: {
    owner: { type: 'string' },
    address: { type: 'string' },
    balanceLamports: lamports,
    reservedLamports: lamports,
    availableLamports: lamports,
    limits,
    spentTodayLamports: lamports,
    launchesToday: { type: 'integer' },
    ledger: { type: 'array', items: entry, description: 'the newest entries' },
  },
};

const quote = {
  type: 'object',
  properties: {
    accounts: {
      type: 'array',
      items: { type: 'object', properties: { role: { type: 'string' }, address: { type: ['string', 'null'] }, bytes: { type: 'integer' }, rentLamports: lamports, returned: { type: 'boolean', description: 'opened and closed in the same transaction' } } },
    },
    transactions: { type: 'integer' },
    signatures: { type: 'integer' },
    feeLamports: lamports,
    priorityFeeLamports: lamports,
    poolQuoteLamports: lamports,
    operatorFeeLamports: lamports,
    totalLamports: lamports,
    availableLamports: lamports,
    sufficient: { type: 'boolean' },
    shortfallLamports: lamports,
    graduation: {
      type: 'object',
      properties: { paidBy: { enum: ['owner'] }, lamports },
      description: 'a creator-signed bonding curve only: its graduation (migration to DAMM v2), paid by the owner’s funding wallet when the curve is full, not by the creator and not in totalLamports',
    },
  },
};

export const fundingPaths: Json = {
  '/api/launches/quote': {
    post: {
      summary: 'What a launch will take from the owner’s funding wallet, and whether it is there (validated as create; creates nothing)',
      security: bearer,
      requestBody: { required: true, content: { 'application/json': { schema: ref('LaunchRequest') } } },
      responses: { 200: json({ type: 'object', properties: { quote } }, 'The quote'), 400: error('invalid_request'), 401: error('unauthorized'), 403: error('forbidden'), 422: error('chain_capability_missing'), 503: error('the chain cannot be read now') },
    },
  },
  '/api/funding': {
    get: { summary: 'The owner’s funding wallet: balance on chain, reserved, available, limits, today’s use, recent ledger', security: bearer, responses: { 200: json({ type: 'object', properties: { funding } }, 'The wallet'), 401: error('unauthorized'), 403: error('forbidden') } },
  },
  '/api/funding/ledger': {
    get: {
      summary: 'The owner’s ledger entries, newest first',
      security: bearer,
      parameters: [
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200 } },
        { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0 } },
      ],
      responses: { 200: json({ type: 'object', properties: { entries: { type: 'array', items: entry }, pagination: ref('Pagination') } }, 'A page of entries'), 400: error('invalid_request'), 401: error('unauthorized') },
    },
  },
  '/api/funding/{owner}/limits': {
    put: {
      summary: 'Set or clear (null) an owner’s funding limits (admin)',
      security: bearer,
      parameters: [{ name: 'owner', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: { required: true, content: { 'application/json': { schema: limits } } },
      responses: { 200: json({ type: 'object', properties: { limits } }, 'The owner’s limits'), 400: error('invalid_request'), 401: error('unauthorized'), 403: error('forbidden'), 404: error('not_found: the owner has no API key and no funding wallet (nothing created)') },
    },
  },
  '/api/owners/{owner}/bounds': {
    get: {
      summary: 'The bounds that hold for an owner and the admin’s overrides of them (admin)',
      security: bearer,
      parameters: [{ name: 'owner', in: 'path', required: true, schema: { type: 'string' } }],
      responses: { 200: json({ type: 'object', properties: { bounds: ownerBounds } }, 'The owner’s bounds'), 400: error('invalid_request'), 401: error('unauthorized'), 403: error('forbidden') },
    },
    put: {
      summary: 'Set or clear (null: the configured default) an owner’s bounds: endpoints, launches in flight, redeliveries per delivery (admin)',
      security: bearer,
      parameters: [{ name: 'owner', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: { required: true, content: { 'application/json': { schema: boundOverrides } } },
      responses: { 200: json({ type: 'object', properties: { bounds: ownerBounds } }, 'The owner’s bounds'), 400: error('invalid_request: a bound that is not an integer from 0 to its ceiling or null, or an unknown field'), 401: error('unauthorized'), 403: error('forbidden') },
    },
  },
  '/api/funding/withdraw': {
    post: {
      summary: 'Move lamports out of the owner’s funding wallet (scope funds:withdraw; never below what reservations need)',
      security: bearer,
      parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 255 } }],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['to', 'lamports'], properties: { to: { type: 'string' }, lamports }, additionalProperties: false } } } },
      responses: {
        200: json({ type: 'object', properties: { withdrawal: { type: 'object', properties: { signature: { type: 'string' }, lamports, to: { type: 'string' } } } } }, 'Sent and confirmed'),
        400: error('invalid_request; invalid_destination: `to` is a program, a sysvar, another reserved or executable account, or a new account the amount cannot open (nothing signed)'),
        401: error('unauthorized'),
        402: error('insufficient_funds'),
        403: error('forbidden: needs funds:withdraw'),
        409: error('funds_reserved / withdrawal_in_progress'),
        422: error('idempotency_key_reused; withdrawal_failed: refused by the chain, or failed on chain (then its fee was paid and is in the ledger)'),
        503: error('the chain cannot be reached now; nothing was paid'),
      },
    },
  },
};
