import { z } from 'zod';

/**
 * The payload of every webhook event kind (docs/events.md): the envelope and each kind's `data`.
 * OpenAPI's `webhooks` section is generated from these, the test route's samples are parsed
 * through them, and tests check the events real launches record against them. Objects are loose:
 * receivers must ignore fields they do not know, and the service may add some.
 */

const address = z.string().describe('base58 address');
const signature = z.string().describe('base58 transaction signature');
const amount = z.string().regex(/^\d+$/).describe('raw base units as a decimal string');
const transaction = z.looseObject({ type: z.string().describe('mint | metadata | distribution | vesting | dao | pool | nonce_rent | …'), signature });

const launchStatus = (status: 'queued' | 'processing') => z.looseObject({ status: z.literal(status) });

export const EVENT_DATA_SCHEMAS = {
  'launch.awaiting_signatures': z.looseObject({
    count: z.number().int().min(1).describe('transactions offered for the creator to sign'),
    expiresAt: z.string().describe('when they stop being accepted: the setup\'s blockhash expiry, then the signing deadline'),
  }),
  'launch.queued': launchStatus('queued').extend({
    retry: z.boolean().optional().describe('true when a failed launch was requeued from its dead letter'),
    resumeAt: z.string().nullable().optional().describe('the step a requeued launch resumes at'),
  }),
  'launch.processing': launchStatus('processing'),
  'launch.step_complete': z.looseObject({
    step: z.string(),
    index: z.number().int().min(1),
    total: z.number().int().min(1),
    transactions: z.array(transaction),
    result: z.record(z.string(), z.unknown()).describe("the step's result: the addresses it created"),
  }),
  'launch.complete': z.looseObject({
    mint: address.nullable(),
    metadata: address.nullable(),
    vestingContract: address.nullable(),
    dao: z.looseObject({ realm: address.nullable(), treasury: address.nullable() }).nullable(),
    pool: z.looseObject({ address: address.nullable(), lpMint: address.nullable() }).nullable(),
    transactions: z.array(transaction),
  }),
  'launch.failed': z.looseObject({
    error: z.looseObject({ code: z.string(), message: z.string(), step: z.string().nullable() }),
    partialResults: z.record(z.string(), z.unknown()).describe('every address already created'),
  }),
  'vesting.created': z.looseObject({
    vestingContract: address,
    vesting: z.looseObject({
      escrow: address,
      recipient: address.describe('the beneficiary'),
      mint: address,
      amount: amount.describe('everything the escrow vests'),
      schedule: z.looseObject({
        startTime: z.number().describe('unix seconds'),
        cliffTime: z.number().describe('unix seconds'),
        frequencySeconds: z.number(),
        cliffUnlockAmount: amount,
        amountPerPeriod: amount,
        numberOfPeriods: z.number().int(),
      }),
    }),
  }),
  'dao.created': z.looseObject({
    dao: z.looseObject({ realm: address, governance: address, treasury: address, treasuryTokenAccount: address, treasuryAmount: amount, communityMint: address, name: z.string() }),
  }),
  'vesting.cliff_reached': z.looseObject({ vestingContract: address, beneficiary: address, cliffTime: z.union([z.number(), z.string()]).optional(), unlockedAmount: amount.optional() }),
  'vesting.claimed': z.looseObject({ vestingContract: address, beneficiary: address, amount, totalClaimed: amount.optional(), remaining: amount.optional(), signature }),
  'vesting.complete': z.looseObject({ vestingContract: address, totalClaimed: amount, signature: signature.optional(), closed: z.boolean().describe('true when the escrow was closed') }),
  'dao.proposal_created': z.looseObject({ realm: address, governance: address.optional(), proposal: address, name: z.string().optional(), proposer: address.optional(), signature: signature.optional() }),
  'dao.vote_cast': z.looseObject({ realm: address, proposal: address, voter: address, vote: z.string().describe('approve | deny | abstain | veto'), weight: amount, signature: signature.optional() }),
  'dao.proposal_passed': z.looseObject({ realm: address, proposal: address, state: z.string().optional(), yesVotes: amount, noVotes: amount }),
  'dao.proposal_failed': z.looseObject({ realm: address, proposal: address, state: z.string().optional(), yesVotes: amount, noVotes: amount }),
  'fees.claimed': z.looseObject({ pool: address, claimer: address, amounts: z.record(z.string(), amount).describe('per mint'), signature, kind: z.enum(['creator', 'protocol', 'fund']) }),
  'pool.progress': z.looseObject({
    pool: address.describe('the bonding curve (DBC virtual pool)'),
    percent: z.union([z.literal(25), z.literal(50), z.literal(75)]).describe('the share of the graduation threshold reached: 25, 50 or 75'),
    quoteReserveLamports: amount.describe("the curve's quote reserve when the watcher saw it"),
    thresholdLamports: amount.describe('the quote reserve at which the curve graduates'),
  }),
  'pool.graduated': z.looseObject({
    pool: address.describe('the bonding curve'),
    ammPool: address.describe('the Meteora DAMM v2 pool it migrated to'),
    positions: z.array(z.looseObject({ address, nftMint: address, nftAccount: address, owner: address.describe("the position's owner: the curve's DBC creator (the owner's funding wallet); its liquidity is locked for good") })),
    signature: signature.describe('the migration transaction'),
    dammConfig: address.describe('the DAMM v2 config (fee tier) the pool was created with'),
    paidBy: address.nullable().describe("the wallet that paid the migration (the owner's funding wallet); null when someone else migrated the curve first"),
    vesting: z.looseObject({ escrow: address.describe('the Jupiter Lock escrow DBC made'), recipient: address.describe('vesting.beneficiary'), amount: amount }).nullable().describe("the curve's locked vesting, or null without one"),
  }),
  'funding.deposit_received': z.looseObject({ address: address.describe("the owner's funding wallet"), lamports: amount.describe('lamports received'), signature, balanceLamports: amount.describe("the wallet's balance after the deposit") }),
  'funding.low_balance': z.looseObject({ address: address.describe("the owner's funding wallet"), balanceLamports: amount, thresholdLamports: amount.describe("the owner's lowBalanceLamports") }),
  'funding.withdrawn': z.looseObject({ address: address.describe("the owner's funding wallet"), to: address, lamports: amount, signature }),
} as const;

export type DocumentedEventKind = keyof typeof EVENT_DATA_SCHEMAS;

/** When each kind is sent (docs/events.md's "When" column, shortened): `GET /api/event-types` and OpenAPI's `webhooks` show it. */
export const EVENT_DESCRIPTIONS: Record<DocumentedEventKind, string> = {
  'launch.awaiting_signatures': 'A creator-signed launch offers transactions for its creator to sign (its setup, then the launch\'s).',
  'launch.queued': 'The launch was accepted, or requeued from its dead letter (then retry: true and resumeAt).',
  'launch.processing': 'The runner started the launch\'s first step.',
  'launch.step_complete': 'A step committed: its transactions and the addresses it created.',
  'launch.complete': 'Every step committed and its transactions are final: the launch\'s addresses and transactions.',
  'launch.failed': 'A non-recoverable failure, or retries exhausted: the error and every address already created.',
  'vesting.created': 'The create_vesting step committed: the vesting escrow and its schedule.',
  'dao.created': 'The create_dao step committed: the realm, its governance and treasury.',
  'vesting.cliff_reached': "The vesting escrow's cliff time has passed (once per launch).",
  'vesting.claimed': "A claim transaction on the launch's vesting escrow.",
  'vesting.complete': 'Everything the escrow vests has been claimed, or the escrow was closed.',
  'dao.proposal_created': "A proposal under the launch's realm.",
  'dao.vote_cast': "A vote on a proposal under the launch's realm.",
  'dao.proposal_passed': "A proposal's state became Succeeded, Executing or Completed.",
  'dao.proposal_failed': "A proposal's state became Defeated or Vetoed.",
  'fees.claimed': "A fee-collection instruction on the launch's pool.",
  'pool.progress': "The bonding curve's quote reserve reached 25, 50 or 75 % of its graduation threshold (once each).",
  'pool.graduated': 'The bonding curve migrated to its DAMM v2 pool (the service runs the migration once the curve is full).',
  'funding.deposit_received': "A transaction the funding wallet did not pay for raised its balance (launchId null; endpoints only).",
  'funding.low_balance': "The funding wallet's balance went below the owner's lowBalanceLamports (launchId null; endpoints only).",
  'funding.withdrawn': 'A withdrawal from the funding wallet was sent and recorded (launchId null; endpoints only).',
};

/** The JSON Schema of one kind's `data`, as `GET /api/event-types` and OpenAPI's `webhooks` carry it. */
export function dataJsonSchema(kind: DocumentedEventKind): Record<string, unknown> {
  const schema = z.toJSONSchema(EVENT_DATA_SCHEMAS[kind], { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}

/** The envelope of one event kind (docs/events.md). */
export function envelopeSchema(kind: DocumentedEventKind) {
  return z.object({
    id: z.string().describe('evt_…: unique per event, stable across retries; dedupe on it'),
    event: z.literal(kind),
    timestamp: z.string().describe('ISO 8601 time the event was recorded'),
    launchId: kind.startsWith('funding.') ? z.null().describe("an owner's own event: no launch") : z.string(),
    sequence: z.number().int().min(1).describe('1, 2, 3… per launch'),
    data: EVENT_DATA_SCHEMAS[kind],
  });
}

/** Whether a recorded body matches its kind's schema; kinds without a schema pass. */
export function checkEnvelope(body: unknown): { ok: true } | { ok: false; kind: string; issues: string[] } {
  const kind = (body as { event?: unknown } | null)?.event;
  if (typeof kind !== 'string' || !(kind in EVENT_DATA_SCHEMAS)) return { ok: true };
  const parsed = envelopeSchema(kind as DocumentedEventKind).safeParse(body);
  return parsed.success ? { ok: true } : { ok: false, kind, issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
}
