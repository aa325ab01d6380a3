import { newId } from '../lib/ids.js';
import type { WebhookEnvelope } from './outbox.js';

/** Every event kind of seed 001; the test route accepts each of them. */
export const WEBHOOK_EVENT_KINDS = [
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
] as const;

export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

export function isWebhookEventKind(value: string): value is WebhookEventKind {
  return (WEBHOOK_EVENT_KINDS as readonly string[]).includes(value);
}

// Plausible base58 addresses and signatures, so receivers can exercise their parsing.
const MINT = '7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU';
const METADATA = '9Yv3mSrcVCS4dS1ffXkX4kNqg5aM4bq7ZVw9cAZjUeYt';
const VESTING = 'EscrwTxrsGeWq1AvMMd2QqWb8LSD1tG4JmL1d5CxY8ZN';
const REALM = 'RLMpXkEDfZf7YgKdW8xqPq6jbKkGqzCGrWz1yDdiBiZm';
const TREASURY = 'TRSy8cMhK9CSpnZmgS8oJXx5nqLU2a2pDxwaYzyG6bBf';
const POOL = 'PooL6fYxH9kM3qWv1Ze7rTcUjN2bRsA8dEgKXmLpVyQw';
const LP_MINT = 'LPm1nt4bQ8zXrVcN7wYs2KdJ5hTgFa3eUoRiPlMkEjHq';
const BENEFICIARY = '3vZ67CWd7uGNxAbNpBkMXq9WaKj1eFrTs5yUoHiDgLmP';
const SIG = '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW';

function sampleData(event: WebhookEventKind): unknown {
  switch (event) {
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
      return { vestingContract: VESTING, beneficiary: BENEFICIARY, cliffSeconds: 2_592_000, periodSeconds: 86_400, periods: 365 };
    case 'vesting.cliff_reached':
      return { vestingContract: VESTING, beneficiary: BENEFICIARY };
    case 'vesting.claimed':
      return { vestingContract: VESTING, beneficiary: BENEFICIARY, amount: '410958904', signature: SIG };
    case 'vesting.complete':
      return { vestingContract: VESTING, beneficiary: BENEFICIARY, totalClaimed: '150000000000' };
    case 'dao.created':
      return { realm: REALM, treasury: TREASURY, name: 'Demo DAO' };
    case 'dao.proposal_created':
      return { realm: REALM, proposal: 'PRPs1x8Lq4cVbN3mZkWdYt7JhG2fRe9aUoTiSpKxLqZn', title: 'Fund the grants programme' };
    case 'dao.vote_cast':
      return { realm: REALM, proposal: 'PRPs1x8Lq4cVbN3mZkWdYt7JhG2fRe9aUoTiSpKxLqZn', voter: BENEFICIARY, vote: 'yes', weight: '1000000' };
    case 'dao.proposal_passed':
    case 'dao.proposal_failed':
      return { realm: REALM, proposal: 'PRPs1x8Lq4cVbN3mZkWdYt7JhG2fRe9aUoTiSpKxLqZn', yesVotes: '52000000', noVotes: '11000000' };
  }
}

/** A realistic envelope of `event` for the test route, marked as a test by its ids. */
export function sampleEnvelope(event: WebhookEventKind, now: number): WebhookEnvelope {
  return { id: newId('evt_test'), event, timestamp: new Date(now).toISOString(), launchId: 'lch_test_sample', sequence: 1, data: sampleData(event) };
}
