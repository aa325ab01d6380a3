import { describe, expect, it } from 'vitest';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import { classifyRpcError, classifyTransactionFailure } from '../../src/chain/errors.js';
import { deriveLaunchKeys } from '../../src/chain/keys.js';
import { splitSupply } from '../../src/chain/steps/allocations.js';
import { requiredPrograms } from '../../src/chain/steps/requiredPrograms.js';
import { samplePlan } from './support/fixtures.js';

describe('launch keys', () => {
  it('derives the same mint and base keypairs for the same secret and launch, different ones otherwise', () => {
    const secret = Buffer.alloc(32, 1);
    const a = deriveLaunchKeys(secret, 'lch_a');
    expect(deriveLaunchKeys(Buffer.alloc(32, 1), 'lch_a').mint.publicKey.toBase58()).toBe(a.mint.publicKey.toBase58());
    expect(a.base.publicKey.equals(a.mint.publicKey)).toBe(false);
    expect(deriveLaunchKeys(secret, 'lch_b').mint.publicKey.equals(a.mint.publicKey)).toBe(false);
    expect(deriveLaunchKeys(Buffer.alloc(32, 2), 'lch_a').mint.publicKey.equals(a.mint.publicKey)).toBe(false);
  });
});

describe('supply split', () => {
  it('floors every share and gives the rounding remainder to the creator', () => {
    const shares = splitSupply(samplePlan({ totalSupply: 7n, decimals: 0 }));
    expect(shares.map((s) => [s.kind, s.amount, s.held])).toEqual([
      ['creator', 2n, 'creator'],
      ['vesting', 1n, 'payer'],
      ['treasury', 2n, 'payer'],
      ['pool', 2n, 'payer'],
    ]);
  });

  it('leaves out allocations with a zero share', () => {
    const shares = splitSupply(samplePlan({ allocations: { creator: 60, vesting: 0, treasury: 40, pool: 0 } }));
    expect(shares.map((s) => s.kind)).toEqual(['creator', 'treasury']);
  });
});

describe('failure classification', () => {
  it('classifies transaction failures by what a retry could change', () => {
    expect(classifyTransactionFailure('Transaction simulation failed: Blockhash not found')).toMatchObject({ code: 'blockhash_expired' });
    expect(classifyTransactionFailure('Attempt to debit an account but found no record of a prior credit.')).toMatchObject({ code: 'insufficient_balance' });
    expect(classifyTransactionFailure('custom program error: 0x1\nTransfer: insufficient lamports 5, need 10')).toMatchObject({ code: 'insufficient_balance' });
    expect(classifyTransactionFailure('Error processing Instruction 2: custom program error: 0x3')).toMatchObject({ code: 'program_error' });
    expect(classifyTransactionFailure('This transaction has already been processed')).toBeUndefined();
  });

  it('treats rate limits, server errors, timeouts and refused connections as transient', () => {
    expect(classifyRpcError(new Error('429 Too Many Requests: {}'))).toMatchObject({ code: 'rpc_rate_limited' });
    expect(classifyRpcError(new Error('503 Service Unavailable: {}'))).toMatchObject({ code: 'rpc_unavailable' });
    expect(classifyRpcError(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toMatchObject({ code: 'rpc_timeout' });
    const refused = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) });
    expect(classifyRpcError(refused)).toBeInstanceOf(TransientError);
    expect(classifyRpcError(new Error('401 Unauthorized: bad key'))).toBeInstanceOf(NonRetriableError);
  });
});

describe('required programs', () => {
  it('asks for nothing beyond the embedded defaults for a token-2022 launch without vesting, DAO or pool', () => {
    expect(requiredPrograms(samplePlan({ allocations: { creator: 50, vesting: 0, treasury: 50, pool: 0 } }))).toEqual([]);
  });

  it('names each program a full spl-token launch needs, with how to provide it', () => {
    const plan = samplePlan({
      tokenStandard: 'spl-token',
      vesting: { beneficiary: samplePlan().creator, cliffSeconds: 60, periodSeconds: 60, periods: 2 },
      dao: { name: 'DAO', votingPeriodSeconds: 3600, quorumPercent: 10 },
      pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '1' },
    });
    const needed = requiredPrograms(plan);
    expect(needed.map((p) => p.name)).toEqual(['Metaplex Token Metadata', 'Jupiter Lock', 'SPL Governance', 'Raydium CPMM']);
    expect(needed[0]?.reason).toContain('solana program dump -u m metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s');
  });
});
