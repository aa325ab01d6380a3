import { newId } from '../lib/ids.js';
import type { WebhookEnvelope } from './outbox.js';
import { SAMPLE, WATCHER_SAMPLES } from '../watcher/events.js';

/** Every event kind of docs/events.md; the test route accepts each of them. */
export const WEBHOOK_EVENT_KINDS = [
  'launch.awaiting_signatures',
  'launch.queued',
  'launch.processing',
  'launch.step_complete',
  'launch.complete',
  'launch.failed',
  'vesting.created',
  'vesting.cliff_reached',
  'vesting.claimed',
  'vesting.complete',
  'dao.created',
  'dao.proposal_created',
  'dao.vote_cast',
  'dao.proposal_passed',
  'dao.proposal_failed',
  'fees.claimed',
  'pool.progress',
  'pool.graduated',
  'funding.deposit_received',
  'funding.low_balance',
  'funding.withdrawn',
] as const;

export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

export function isWebhookEventKind(value: string): value is WebhookEventKind {
  return (WEBHOOK_EVENT_KINDS as readonly string[]).includes(value);
}

// Plausible base58 addresses and signatures, so receivers can exercise their parsing; the watcher's samples share theirs.
const { MINT, VESTING, REALM, POOL, GOVERNANCE, BENEFICIARY, SIG } = SAMPLE;
const METADATA = '9Yv3mSrcVCS4dS1ffXkX4kNqg5aM4bq7ZVw9cAZjUeYt';
const TREASURY = 'TRSy8cMhK9CSpnZmgS8oJXx5nqLU2a2pDxwaYzyG6bBf';
const LP_MINT = 'LPm1nt4bQ8zXrVcN7wYs2KdJ5hTgFa3eUoRiPlMkEjHq';
const ESCROW_TOKEN = 'EsTk9wQ2mXvR4bJcN8yLzP3dHfG6aT1uKoWsVeYiAqBn';
const JUPITER_LOCK = 'LocpQgucEQHbqNABEYvBvwoxCPsSbG91A1QaQhQQqjn';
const GOVERNANCE_PROGRAM = 'GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw';
const TREASURY_TOKEN = 'TrTk3nP8qLwX2vCm7RbZ5yHdJ4fGs9aKoUeNiVtYxBq1';

function sampleData(event: WebhookEventKind): unknown {
  switch (event) {
    case 'launch.awaiting_signatures':
      return { count: 4, expiresAt: '2026-01-02T03:04:05.000Z' };
    case 'launch.queued':
      return { status: 'queued' };
    case 'launch.processing':
      return { status: 'processing' };
    case 'launch.step_complete':
      return { step: 'create_mint', index: 1, total: 6, transactions: [{ type: 'mint', signature: SIG }], result: { mint: MINT } };
    case 'launch.complete':
      return {
        mint: MINT,
        metadata: METADATA,
        vestingContract: VESTING,
        dao: { realm: REALM, treasury: TREASURY },
        pool: { address: POOL, lpMint: LP_MINT },
        transactions: [
          { type: 'mint', signature: SIG },
          { type: 'vesting', signature: SIG },
        ],
      };
    case 'launch.failed':
      return {
        error: { code: 'insufficient_balance', message: 'Payer balance too low to create the pool', step: 'create_pool' },
        partialResults: { mint: MINT, metadata: METADATA },
      };
    case 'vesting.created':
      // The create_vesting step's result (src/chain/steps/createVesting.ts).
      return {
        vestingContract: VESTING,
        vesting: {
          escrow: VESTING,
          escrowTokenAccount: ESCROW_TOKEN,
          programId: JUPITER_LOCK,
          recipient: BENEFICIARY,
          mint: MINT,
          amount: '150000000000000000',
          schedule: { startTime: 1_764_547_200, cliffTime: 1_767_139_200, frequencySeconds: 86_400, cliffUnlockAmount: '0', amountPerPeriod: '410958904109589', numberOfPeriods: 365 },
        },
      };
    case 'vesting.cliff_reached':
    case 'vesting.claimed':
    case 'vesting.complete':
    case 'dao.proposal_created':
    case 'dao.vote_cast':
    case 'dao.proposal_passed':
    case 'dao.proposal_failed':
    case 'fees.claimed':
    case 'pool.progress':
    case 'pool.graduated':
    case 'funding.deposit_received':
    case 'funding.low_balance':
    case 'funding.withdrawn':
      // Built by the watcher's own payload builders: the samples are what the watcher sends.
      return WATCHER_SAMPLES[event];
    case 'dao.created':
      // The create_dao step's result (src/chain/steps/createDao.ts).
      return {
        dao: {
          realm: REALM,
          governance: GOVERNANCE,
          treasury: TREASURY,
          treasuryTokenAccount: TREASURY_TOKEN,
          treasuryAmount: '100000000000000000',
          communityMint: MINT,
          programId: GOVERNANCE_PROGRAM,
          name: 'Demo DAO',
        },
      };
  }
}

/** A realistic envelope of `event` for the test route, marked as a test by its ids. */
export function sampleEnvelope(event: WebhookEventKind, now: number): WebhookEnvelope {
  // An owner's own events (funding) belong to no launch.
  const launchId = event.startsWith('funding.') ? null : 'lch_test_sample';
  return { id: newId('evt_test'), event, timestamp: new Date(now).toISOString(), launchId, sequence: 1, data: sampleData(event) };
}
