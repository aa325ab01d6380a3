/**
 * The payloads of the watcher's events (docs/watcher.md), built in one place: the watcher sends them and
 * the test route's samples are built with the same functions, so the two cannot drift apart.
 * Amounts are raw base units as decimal strings.
 */

/** `vesting.cliff_reached`; `unlockedAmount` is absent only when the escrow was closed before the check and the watch does not know it. */
export const cliffReached = (a: { vestingContract: string; beneficiary: string; cliffTime: bigint; unlockedAmount: bigint | undefined }) => ({
  vestingContract: a.vestingContract,
  beneficiary: a.beneficiary,
  cliffTime: new Date(Number(a.cliffTime) * 1000).toISOString(),
  ...(a.unlockedAmount === undefined ? {} : { unlockedAmount: a.unlockedAmount.toString() }),
});

export const vestingClaimed = (a: { vestingContract: string; beneficiary: string; amount: bigint; totalClaimed: bigint; total: bigint; signature: string }) => ({
  vestingContract: a.vestingContract,
  beneficiary: a.beneficiary,
  amount: a.amount.toString(),
  totalClaimed: a.totalClaimed.toString(),
  remaining: (a.total > a.totalClaimed ? a.total - a.totalClaimed : 0n).toString(),
  signature: a.signature,
});

export const vestingComplete = (a: { vestingContract: string; totalClaimed: bigint; signature: string; closed?: boolean }) => ({
  vestingContract: a.vestingContract,
  totalClaimed: a.totalClaimed.toString(),
  signature: a.signature,
  closed: a.closed ?? false,
});

export const proposalCreated = (a: { realm: string; governance: string; proposal: string; name: string; proposer: string; signature: string }) => ({ ...a });

export const voteCast = (a: { realm: string; proposal: string; voter: string; vote: 'approve' | 'deny' | 'abstain' | 'veto'; weight: string; signature: string }) => ({ ...a });

export const proposalOutcomeData = (a: { realm: string; proposal: string; state: string; yesVotes: string; noVotes: string }) => ({ ...a });

export const feesClaimed = (a: { pool: string; claimer: string; amounts: Record<string, string>; signature: string; kind: string }) => ({ ...a });

/** `pool.progress`: a bonding curve's quote reserve reached `percent` (25, 50 or 75) of its graduation threshold. */
export const poolProgress = (a: { pool: string; percent: number; quoteReserveLamports: bigint; thresholdLamports: bigint }) => ({
  pool: a.pool,
  percent: a.percent,
  quoteReserveLamports: a.quoteReserveLamports.toString(),
  thresholdLamports: a.thresholdLamports.toString(),
});

/** `pool.graduated`: the curve migrated to its DAMM v2 pool (the service's migration, or anyone's). */
export const poolGraduated = (a: { pool: string; ammPool: string; positions: Array<{ address: string; nftMint: string; nftAccount: string; owner: string }>; signature: string; dammConfig: string; paidBy: string | null; vesting: { escrow: string; recipient: string; amount: string } | null }) => ({ ...a });

/** `funding.deposit_received`: lamports the owner's funding wallet received in a transaction it did not pay for. */
export const depositReceived = (a: { address: string; lamports: bigint | number; signature: string; balanceLamports: bigint | number }) => ({
  address: a.address,
  lamports: String(a.lamports),
  signature: a.signature,
  balanceLamports: String(a.balanceLamports),
});

/** `funding.low_balance`: the wallet's balance went below the owner's threshold (once per crossing). */
export const lowBalance = (a: { address: string; balanceLamports: bigint | number; thresholdLamports: bigint | number }) => ({
  address: a.address,
  balanceLamports: String(a.balanceLamports),
  thresholdLamports: String(a.thresholdLamports),
});

/** `funding.withdrawn`: a withdrawal from the wallet (`POST /api/funding/withdraw`) was sent and recorded. */
export const withdrawn = (a: { address: string; to: string; lamports: bigint | number; signature: string }) => ({
  address: a.address,
  to: a.to,
  lamports: String(a.lamports),
  signature: a.signature,
});

/** Plausible base58 values for the test route's samples (src/webhooks/sampleEvents.ts uses them too). */
export const SAMPLE = {
  VESTING: 'EscrwTxrsGeWq1AvMMd2QqWb8LSD1tG4JmL1d5CxY8ZN',
  BENEFICIARY: '3vZ67CWd7uGNxAbNpBkMXq9WaKj1eFrTs5yUoHiDgLmP',
  REALM: 'RLMpXkEDfZf7YgKdW8xqPq6jbKkGqzCGrWz1yDdiBiZm',
  GOVERNANCE: 'GoVx4N8aWd2tRkPqLmZ7sJ5hYcE3uF9bT1oXiKnMgQvA',
  PROPOSAL: 'PRPs1x8Lq4cVbN3mZkWdYt7JhG2fRe9aUoTiSpKxLqZn',
  POOL: 'PooL6fYxH9kM3qWv1Ze7rTcUjN2bRsA8dEgKXmLpVyQw',
  MINT: '7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU',
  WSOL: 'So11111111111111111111111111111111111111112',
  WALLET: 'FundWq3xYhT7mKc2LpZs9RdE4vBnJ8aGu1oXiKtMgQvC',
  SIG: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
} as const;
const { VESTING, BENEFICIARY, REALM, GOVERNANCE, PROPOSAL, POOL, MINT, WSOL, WALLET, SIG } = SAMPLE;
const AMM_POOL = '7a69gZEwdWx9QCevPxcnmnhRK5LExKqR9eFBATubco7X';
const POSITION = '3WQrb8Pw2vwCsY6zzaSikmLwjsU9VTtTQL7wRtmxTMiG';
const POSITION_NFT = 'FUXG4Fyf1F2LgW48mguFEYyGkYekMZjTSAyhhQAMggfu';
const POSITION_NFT_ACCOUNT = 'FyfMkeMtEvb58KddcghB1BzhMmYkFS9ZcQpHXCdxzbFN';
const DAMM_CONFIG = 'Hv8Lmzmnju6m7kcokVKvwqz7QPmdX9XfKjJsXz8RXcjp';

/** A sample of every watcher event, built by the same functions the watcher uses. */
export const WATCHER_SAMPLES = {
  'vesting.cliff_reached': cliffReached({ vestingContract: VESTING, beneficiary: BENEFICIARY, cliffTime: 1_767_225_600n, unlockedAmount: 410_958_904n }),
  'vesting.claimed': vestingClaimed({ vestingContract: VESTING, beneficiary: BENEFICIARY, amount: 410_958_904n, totalClaimed: 410_958_904n, total: 150_000_000_000n, signature: SIG }),
  'vesting.complete': vestingComplete({ vestingContract: VESTING, totalClaimed: 150_000_000_000n, signature: SIG }),
  'dao.proposal_created': proposalCreated({ realm: REALM, governance: GOVERNANCE, proposal: PROPOSAL, name: 'Fund the grants programme', proposer: BENEFICIARY, signature: SIG }),
  'dao.vote_cast': voteCast({ realm: REALM, proposal: PROPOSAL, voter: BENEFICIARY, vote: 'approve', weight: '52000000', signature: SIG }),
  'dao.proposal_passed': proposalOutcomeData({ realm: REALM, proposal: PROPOSAL, state: 'succeeded', yesVotes: '52000000', noVotes: '11000000' }),
  'dao.proposal_failed': proposalOutcomeData({ realm: REALM, proposal: PROPOSAL, state: 'defeated', yesVotes: '11000000', noVotes: '52000000' }),
  'fees.claimed': feesClaimed({ pool: POOL, claimer: BENEFICIARY, amounts: { [MINT]: '1250000', [WSOL]: '3100' }, signature: SIG, kind: 'creator' }),
  'pool.progress': poolProgress({ pool: POOL, percent: 50, quoteReserveLamports: 40_125_000_000n, thresholdLamports: 80_000_000_000n }),
  'pool.graduated': poolGraduated({ pool: POOL, ammPool: AMM_POOL, positions: [{ address: POSITION, nftMint: POSITION_NFT, nftAccount: POSITION_NFT_ACCOUNT, owner: WALLET }], signature: SIG, dammConfig: DAMM_CONFIG, paidBy: WALLET, vesting: null }),
  'funding.deposit_received': depositReceived({ address: WALLET, lamports: 2_000_000_000, signature: SIG, balanceLamports: 2_350_000_000 }),
  'funding.low_balance': lowBalance({ address: WALLET, balanceLamports: 90_000_000, thresholdLamports: 100_000_000 }),
  'funding.withdrawn': withdrawn({ address: WALLET, to: BENEFICIARY, lamports: 500_000_000, signature: SIG }),
} as const;
