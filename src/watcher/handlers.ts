import { PublicKey } from '@solana/web3.js';
import { decodeVestingEscrow } from '../chain/programs/jupiterLock/escrowAccount.js';
import type { ChainHistory } from '../chain/history.js';
import { decodeFeeCollections } from './decoders/cpmm.js';
import { decodeCurveFeeClaims } from './decoders/dbc.js';
import { decodeGovernanceActions, decodeProposal, decodeTokenOwner, decodeVoteWeight, proposalOutcome } from './decoders/governance.js';
import { decodeVestingClaims, escrowTotal, findEscrowClose, unlockedAt } from './decoders/jupiterLock.js';
import { noteWalletBalance } from '../funding/wallets.js';
import { streamOwner } from '../webhooks/outbox.js';
import { cliffReached, depositReceived, feesClaimed, lowBalance, poolProgress, proposalCreated, proposalOutcomeData, vestingClaimed, vestingComplete, voteCast } from './events.js';
import type { FoundEvent, NewWatch } from './store.js';
import type { HandlerOutcome, WatchHandler, WatchView } from './watcher.js';
import { curveKit } from '../chain/programs/dbc/curve.js';
import { markMigrationDue } from './graduation/store.js';
import { graduationDue } from './graduation/signal.js';

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {});

async function read(chain: ChainHistory, address: string): Promise<Buffer | null> {
  return (await chain.getAccountInfo(new PublicKey(address)))?.data ?? null;
}

/**
 * The watches a completed launch gets: its escrow, its realm, its pool (docs/watcher.md). A
 * creator-signed curve's watch also reports the creator's own fee claims (`creatorClaims`): the
 * service cannot claim them, so no claim of its own reports them.
 */
export function watchesForLaunch(results: Record<string, unknown>, options: { creatorSigned?: boolean } = {}): NewWatch[] {
  const watches: NewWatch[] = [];
  const vesting = obj(results.vesting);
  if (str(vesting.escrow) !== '') {
    const schedule = obj(vesting.schedule);
    const cliff = Number(str(schedule.cliffTime) || schedule.cliffTime || 0);
    // What the cliff unlocks, kept for a check that finds the escrow already closed (see vestingHandler.scheduled).
    const cliffUnlocked = Number(schedule.frequencySeconds) === 0 ? str(vesting.amount) : str(schedule.cliffUnlockAmount);
    watches.push({
      kind: 'vesting',
      address: str(vesting.escrow),
      context: { programId: str(vesting.programId), recipient: str(vesting.recipient), total: str(vesting.amount), totalClaimed: '0', ...(/^\d+$/.test(cliffUnlocked) ? { cliffUnlocked } : {}) },
      cliffAt: cliff > 0 ? cliff * 1000 : undefined,
    });
  }
  const dao = obj(results.dao);
  if (str(dao.realm) !== '') watches.push({ kind: 'dao', address: str(dao.realm), context: { programId: str(dao.programId), governance: str(dao.governance) } });
  const pool = obj(results.pool);
  if (str(pool.address) !== '' && str(pool.kind) === 'bonding-curve') {
    // The curve's fill (pool.progress) and the moment it is full (its graduation becomes due).
    watches.push({ kind: 'curve', address: str(pool.address), context: { programId: str(pool.programId), thresholdLamports: str(pool.graduationQuoteLamports), ...(options.creatorSigned ? { creatorClaims: true } : {}) } });
  } else if (str(pool.address) !== '') {
    watches.push({ kind: 'pool', address: str(pool.address), context: { programId: str(pool.programId) } });
  }
  return watches;
}

/** Jupiter Lock escrow: claims (v1, v2), completion or close, and the cliff as a scheduled check. */
export const vestingHandler: WatchHandler = {
  async process(watch, transactions) {
    const programId = str(watch.context.programId);
    const total = BigInt(str(watch.context.total) || '0');
    let totalClaimed = BigInt(str(watch.context.totalClaimed) || '0');
    const events: FoundEvent[] = [];
    for (const tx of transactions) {
      for (const claim of decodeVestingClaims(tx, programId, watch.address)) {
        totalClaimed += claim.amount;
        events.push({ event: 'vesting.claimed', signature: tx.signature, instructionIndex: claim.instructionIndex, data: vestingClaimed({ vestingContract: watch.address, beneficiary: claim.recipient, amount: claim.amount, totalClaimed, total, signature: tx.signature }) });
        if (total > 0n && totalClaimed >= total) {
          events.push({ event: 'vesting.complete', signature: tx.signature, instructionIndex: claim.instructionIndex, data: vestingComplete({ vestingContract: watch.address, totalClaimed, signature: tx.signature }) });
          return { events, end: 'vesting_complete', context: { totalClaimed: totalClaimed.toString() } };
        }
      }
      const closed = findEscrowClose(tx, programId, watch.address);
      if (closed !== undefined) {
        events.push({ event: 'vesting.complete', signature: tx.signature, instructionIndex: closed, data: vestingComplete({ vestingContract: watch.address, totalClaimed, signature: tx.signature, closed: true }) });
        return { events, end: 'escrow_closed', context: { totalClaimed: totalClaimed.toString() } };
      }
    }
    return { events, context: { totalClaimed: totalClaimed.toString() } };
  },
  async scheduled(watch, chain, now) {
    const data = await read(chain, watch.address);
    if (!data) {
      // The escrow was closed before the check (the service was down across the cliff and the
      // close): the cliff is reported from the watch (its cliff time, the recipient and, for a watch
      // made with it, what the cliff unlocks).
      if (watch.cliffAt === null || now < watch.cliffAt) return { events: [], confirmed: true };
      const unlocked = str(watch.context.cliffUnlocked);
      const event = cliffReached({ vestingContract: watch.address, beneficiary: str(watch.context.recipient), cliffTime: BigInt(Math.floor(watch.cliffAt / 1000)), unlockedAmount: /^\d+$/.test(unlocked) ? BigInt(unlocked) : undefined });
      return { events: [{ event: 'vesting.cliff_reached', signature: watch.address, instructionIndex: -1, data: event }], confirmed: true };
    }
    const escrow = decodeVestingEscrow(data);
    const nowSec = BigInt(Math.floor(now / 1000));
    if (nowSec < escrow.cliffTime) return { events: [], confirmed: false };
    // What the cliff itself unlocked, whenever the check runs (after downtime it may run late).
    const event = cliffReached({ vestingContract: watch.address, beneficiary: escrow.recipient.toBase58(), cliffTime: escrow.cliffTime, unlockedAmount: unlockedAt(escrow, escrow.cliffTime) });
    return { events: [{ event: 'vesting.cliff_reached', signature: watch.address, instructionIndex: -1, data: event }], confirmed: true, context: { total: escrowTotal(escrow).toString() } };
  },
};

/** SPL Governance realm: proposals created, votes cast, and the outcomes they (or a finalize) cause. */
export const daoHandler: WatchHandler = {
  async process(watch, transactions, chain) {
    const programId = str(watch.context.programId);
    const events: FoundEvent[] = [];
    for (const tx of transactions) {
      for (const action of decodeGovernanceActions(tx, programId, watch.address)) {
        if (action.kind === 'create_proposal') {
          const record = await read(chain, action.tokenOwnerRecord);
          const proposer = record ? decodeTokenOwner(record, programId, action.tokenOwnerRecord) : '';
          events.push({ event: 'dao.proposal_created', signature: tx.signature, instructionIndex: action.instructionIndex, data: proposalCreated({ realm: watch.address, governance: action.governance, proposal: action.proposal, name: action.name, proposer, signature: tx.signature }) });
          continue;
        }
        if (action.kind === 'cast_vote') {
          const record = await read(chain, action.voteRecord);
          const owner = await read(chain, action.voterTokenOwnerRecord);
          events.push({
            event: 'dao.vote_cast',
            signature: tx.signature,
            instructionIndex: action.instructionIndex,
            data: voteCast({
              realm: watch.address,
              proposal: action.proposal,
              voter: owner ? decodeTokenOwner(owner, programId, action.voterTokenOwnerRecord) : '',
              vote: action.vote,
              weight: record ? decodeVoteWeight(record, programId, action.voteRecord) : '0',
              signature: tx.signature,
            }),
          });
        }
        // A vote that tips the proposal, or a finalize, may settle it: one account read tells.
        const proposal = await read(chain, action.proposal);
        if (!proposal) continue;
        const view = decodeProposal(proposal, programId, action.proposal);
        const outcome = proposalOutcome(view.state);
        if (outcome) {
          events.push({ event: outcome.event, signature: action.proposal, instructionIndex: -1, data: proposalOutcomeData({ realm: watch.address, proposal: action.proposal, state: outcome.state, yesVotes: view.yesVotes, noVotes: view.noVotes }) });
        }
      }
    }
    return { events };
  },
};

/** Raydium CPMM pool: fee collections (see decoders/cpmm.ts for which the service's pools allow). */
export const poolHandler: WatchHandler = {
  async process(watch, transactions) {
    const programId = str(watch.context.programId);
    const events: FoundEvent[] = [];
    for (const tx of transactions) {
      for (const fee of decodeFeeCollections(tx, programId, watch.address)) {
        events.push({ event: 'fees.claimed', signature: tx.signature, instructionIndex: fee.instructionIndex, data: feesClaimed({ pool: fee.pool, claimer: fee.claimer, amounts: fee.amounts, signature: tx.signature, kind: fee.kind }) });
      }
    }
    return { events };
  },
};

/**
 * An owner's funding wallet (docs/watcher.md): `funding.deposit_received` for each transaction that
 * raised its balance and that it did not pay for (the fee payer, account 0, is the wallet in every
 * launch transaction and withdrawal: the service's own spends are never deposits), and, in the
 * commit, the balance after the batch's last transaction checked against the owner's low-balance
 * threshold: `funding.low_balance` once per crossing below it.
 */
export const fundingHandler: WatchHandler = {
  async process(watch, transactions) {
    return fundingOutcome(
      watch,
      transactions.map((tx) => {
        const index = tx.accountKeys.indexOf(watch.address);
        return { signature: tx.signature, index, pre: tx.preBalances[index], post: tx.postBalances[index] };
      }),
    );
  },
  // It reads only the wallet's own lamports: on the embedded chain one batched balances read, no transaction decoded.
  async processBalances(watch, changes) {
    return fundingOutcome(watch, changes);
  },
};

/** The funding watch's outcome from the wallet's lamports around each transaction (oldest first). */
function fundingOutcome(watch: WatchView, changes: Array<{ signature: string; index: number; pre: bigint | undefined; post: bigint | undefined }>): HandlerOutcome {
  const owner = streamOwner(watch.launchId);
  const events: FoundEvent[] = [];
  let last: { balance: bigint; signature: string } | undefined;
  for (const { signature, index, pre, post } of changes) {
    if (index < 0 || pre === undefined || post === undefined) continue;
    last = { balance: post, signature };
    if (index === 0 || post <= pre) continue;
    events.push({ event: 'funding.deposit_received', signature, instructionIndex: -1, data: depositReceived({ address: watch.address, lamports: post - pre, signature, balanceLamports: post }) });
  }
  if (owner === undefined || last === undefined) return { events };
  const seen = last;
  return {
    events,
    apply: async (trx, now) => {
      const crossing = await noteWalletBalance(trx, owner, seen.balance, now);
      if (!crossing) return [];
      return [{ event: 'funding.low_balance', signature: seen.signature, instructionIndex: -1, data: lowBalance({ address: watch.address, balanceLamports: seen.balance, thresholdLamports: crossing.crossedBelow }) }];
    },
  };
}

/** The shares of the graduation threshold `pool.progress` reports, once each (docs/events.md). */
export const PROGRESS_MILESTONES = [25, 50, 75] as const;
/** An idle curve is checked at least this often: a buy that fills it is seen, and its graduation due, well within 60 s. */
export const CURVE_WATCH_MAX_INTERVAL_MS = 20_000;

/**
 * A bonding curve (docs/watcher.md): after each batch of its transactions, its state read from the
 * chain. Each of 25, 50 and 75 % of the graduation threshold that the quote reserve has reached is
 * reported once (`pool.progress`, keyed on the curve and the percent); a full curve (the program's
 * migration progress past pre-bonding, or the reserve at the threshold) makes its graduation due in
 * the watch's own fenced commit (`curve_migrations`, run by the graduation job, src/watcher/graduation/); a
 * migrated curve ends the watch (also one migrated by someone else: its graduation is then reported).
 */
export const curveHandler: WatchHandler = {
  maxIntervalMs: CURVE_WATCH_MAX_INTERVAL_MS,
  async process(watch, transactions, chain) {
    // A creator-signed curve: the creator's own claims of its fees (docs/signing.md, "Bonding curves").
    const claims: FoundEvent[] = [];
    if (watch.context.creatorClaims === true) {
      for (const tx of transactions) {
        for (const claim of decodeCurveFeeClaims(tx, str(watch.context.programId), watch.address)) {
          const data = { ...feesClaimed({ pool: watch.address, claimer: claim.claimer, amounts: claim.amounts, signature: tx.signature, kind: 'creator' }), recipient: claim.claimer, source: 'curve', share: claim.share, auto: false };
          claims.push({ event: 'fees.claimed', signature: tx.signature, instructionIndex: claim.instructionIndex, data });
        }
      }
    }
    const data = await read(chain, watch.address);
    if (!data) return { events: claims };
    const outcome = curveOutcome(watch, (await curveKit()).decodeCurveState(data));
    return { ...outcome, events: [...claims, ...outcome.events] };
  },
};

/** What a curve's state means for its watch: the milestones reached, and whether it is full or migrated. */
export function curveOutcome(watch: { address: string; launchId: string; context: Record<string, unknown> }, state: { quoteReserve: bigint; migrationProgress: number; isMigrated: boolean }): HandlerOutcome {
  const threshold = BigInt(str(watch.context.thresholdLamports) || '0');
  const events: FoundEvent[] = [];
  if (!state.isMigrated && threshold > 0n) {
    for (const percent of PROGRESS_MILESTONES) {
      if (state.quoteReserve * 100n < threshold * BigInt(percent)) break;
      events.push({ event: 'pool.progress', signature: watch.address, instructionIndex: percent, data: poolProgress({ pool: watch.address, percent, quoteReserveLamports: state.quoteReserve, thresholdLamports: threshold }) });
    }
  }
  const full = state.isMigrated || state.migrationProgress >= 2 || (threshold > 0n && state.quoteReserve >= threshold);
  if (!full) return { events };
  return {
    events,
    ...(state.isMigrated ? { end: 'graduated' } : {}),
    apply: async (trx, now) => {
      if (await markMigrationDue(trx, watch.launchId, now)) graduationDue.notify();
      return [];
    },
  };
}

/** The product's watch kinds. */
export const WATCH_HANDLERS: Record<string, WatchHandler> = { vesting: vestingHandler, dao: daoHandler, pool: poolHandler, curve: curveHandler, funding: fundingHandler };
