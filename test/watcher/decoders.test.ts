import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { instructionDiscriminator } from '../../src/chain/programs/anchor.js';
import { decodeVestingEscrow } from '../../src/chain/programs/jupiterLock/escrowAccount.js';
import { CPMM_MAINNET_PROGRAM_ID, JUPITER_LOCK_PROGRAM_ID, SPL_GOVERNANCE_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { toHistoryTransaction, type RpcTransactionMeta } from '../../src/chain/embedded/history.js';
import type { ChainHistory, HistoryTransaction } from '../../src/chain/history.js';
import { vestingHandler, watchesForLaunch } from '../../src/watcher/handlers.js';
import { decodeFeeCollections } from '../../src/watcher/decoders/cpmm.js';
import { allInstructions, INNER_KEY_BASE } from '../../src/watcher/decoders/instructions.js';
import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { decodeGovernanceActions, decodeProposal, decodeTokenOwner, decodeVoteWeight, proposalOutcome } from '../../src/watcher/decoders/governance.js';
import { decodeVestingClaims, escrowTotal, findEscrowClose, unlockedAt } from '../../src/watcher/decoders/jupiterLock.js';

// Real bytes: transactions and accounts recorded on the embedded chain running the real Jupiter
// Lock and SPL Governance programs (RECORD_WATCHER_FIXTURES=1 with CHAIN_PROGRAMS_DIR, see
// postLaunch.test.ts). The decoders are pure, so these run in CI without the programs.
interface Recorded {
  signature: string;
  slot: number;
  blockTime: number;
  tx: string;
  meta: RpcTransactionMeta;
  accounts: Record<string, string | null>;
}
const recordedFile = (name: string) => JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'recorded', name), 'utf8')) as Record<string, Recorded>;
// claimV2.json: the last claim of serviceScenario.test.ts (RECORD_WATCHER_FIXTURES=1), made with claim_v2.
const recorded = { ...recordedFile('postLaunch.json'), ...recordedFile('claimV2.json') };
const LOCK = JUPITER_LOCK_PROGRAM_ID.toBase58();
const GOV = SPL_GOVERNANCE_PROGRAM_ID.toBase58();

function load(name: string): { tx: HistoryTransaction; accounts: Record<string, Buffer> } {
  const r = recorded[name];
  if (!r) throw new Error(`no recorded ${name}`);
  const tx = toHistoryTransaction(r.signature, { slot: r.slot, blockTime: r.blockTime, bytes: Buffer.from(r.tx, 'base64'), meta: r.meta });
  const accounts = Object.fromEntries(Object.entries(r.accounts).map(([k, v]) => [k, Buffer.from(v ?? '', 'base64')]));
  return { tx, accounts };
}
const escrowOf = (tx: HistoryTransaction) => tx.instructions.find((ix) => ix.programId === LOCK)?.accounts[0] ?? '';
const realmOf = (tx: HistoryTransaction) => allInstructions(tx).find(({ ix }) => ix.programId === GOV)?.ix.accounts[0] ?? '';

describe('Jupiter Lock claim decoder (recorded claims)', () => {
  it('finds a v1 claim, its recipient and the amount that left the escrow, matching the escrow account after it', () => {
    const { tx, accounts } = load('claim_v1');
    const escrow = escrowOf(tx);
    const claims = decodeVestingClaims(tx, LOCK, escrow);
    expect(claims).toHaveLength(1);
    const [claim] = claims;
    expect(claim).toMatchObject({ version: 1, escrow, recipient: tx.accountKeys[0], instructionIndex: 1 });
    expect(claim?.amount).toBeGreaterThan(0n);
    const state = decodeVestingEscrow(accounts[escrow] as Buffer);
    expect(state.totalClaimedAmount).toBe(claim?.amount);
    expect(unlockedAt(state, BigInt(tx.blockTime ?? 0))).toBe(claim?.amount);
    expect(findEscrowClose(tx, LOCK, escrow)).toBeUndefined();
  });

  it('adds up to everything the escrow vests after the last claim', () => {
    const first = load('claim_v1');
    const { tx, accounts } = load('claim_v1_last');
    const escrow = escrowOf(tx);
    const [claim] = decodeVestingClaims(tx, LOCK, escrow);
    const state = decodeVestingEscrow(accounts[escrow] as Buffer);
    const [earlier] = decodeVestingClaims(first.tx, LOCK, escrow);
    expect((earlier?.amount ?? 0n) + (claim?.amount ?? 0n)).toBe(escrowTotal(state));
    expect(state.totalClaimedAmount).toBe(escrowTotal(state));
  });

  it('finds a recorded v2 claim (mint after the escrow, memo program) and the rest of the escrow it completed', () => {
    const { tx, accounts } = load('claim_v2');
    const escrow = escrowOf(tx);
    const claims = decodeVestingClaims(tx, LOCK, escrow);
    expect(claims).toHaveLength(1);
    const state = decodeVestingEscrow(accounts[escrow] as Buffer);
    const [claim] = claims;
    expect(claim).toMatchObject({ version: 2, escrow, recipient: tx.accountKeys[0], recipientToken: tx.instructions[0]?.accounts[4], instructionIndex: 0 });
    // Half vested per period: this claim took the second half, and the escrow is fully claimed after it.
    expect(claim?.amount).toBe(escrowTotal(state) - escrowTotal(state) / 2n);
    expect(state.totalClaimedAmount).toBe(escrowTotal(state));
    expect(tx.logs).toContain('Program log: Instruction: ClaimV2');
  });

  it('ignores other escrows, other programs and failed decodes', () => {
    const { tx } = load('claim_v1');
    expect(decodeVestingClaims(tx, LOCK, PublicKey.unique().toBase58())).toEqual([]);
    expect(decodeVestingClaims(tx, GOV, escrowOf(tx))).toEqual([]);
    const v2 = structuredClone(tx);
    const ix = v2.instructions[1];
    if (ix) ix.data = Buffer.concat([instructionDiscriminator('claim_v2'), Buffer.from(ix.data.subarray(8)), Buffer.from([0])]);
    // Read as v2, the accounts shift by one (token_mint after the escrow): the escrow token is then unknown.
    expect(decodeVestingClaims(v2, LOCK, escrowOf(tx))[0]).toMatchObject({ version: 2 });
  });
});

describe('instructions invoked by another program (CPI)', () => {
  /** The recorded transaction as if a wrapper program (a multisig, a DAO) had made the call: the same bytes, one level down. */
  const wrapped = (tx: HistoryTransaction, program: string): HistoryTransaction => {
    const index = tx.instructions.findIndex((ix) => ix.programId === program);
    const wrapper = { programId: PublicKey.unique().toBase58(), accounts: [], data: new Uint8Array([1]) };
    const inner = [tx.instructions[index] as HistoryTransaction['instructions'][number], ...(tx.innerInstructions.find((e) => e.index === index)?.instructions ?? [])];
    return { ...tx, instructions: tx.instructions.map((ix, i) => (i === index ? wrapper : ix)), innerInstructions: [...tx.innerInstructions.filter((e) => e.index !== index), { index, instructions: inner }] };
  };

  it('reads the recorded inner instructions of a claim (the token transfer, the program\'s event) and finds one claim, not three', () => {
    const { tx } = load('claim_v2');
    expect(allInstructions(tx).map((k) => [k.key, k.ix.programId])).toEqual([
      [0, LOCK],
      [INNER_KEY_BASE, TOKEN_PROGRAM_ID.toBase58()],
      [INNER_KEY_BASE + 1, LOCK],
    ]);
    expect(decodeVestingClaims(tx, LOCK, escrowOf(tx)).map((c) => c.instructionIndex)).toEqual([0]);
  });

  it('finds a claim made through another program, keyed past the top-level indexes, with the same amount', () => {
    const { tx } = load('claim_v2');
    const escrow = escrowOf(tx);
    const [direct] = decodeVestingClaims(tx, LOCK, escrow);
    const through = wrapped(tx, LOCK);
    expect(through.instructions.some((ix) => ix.programId === LOCK)).toBe(false);
    const [claim] = decodeVestingClaims(through, LOCK, escrow);
    expect(claim).toMatchObject({ version: 2, instructionIndex: INNER_KEY_BASE, recipient: direct?.recipient, amount: direct?.amount });
  });

  it('finds a vote cast through another program', () => {
    const { tx } = load('cast_vote_approve');
    const realm = realmOf(tx);
    const through = wrapped(tx, GOV);
    expect(decodeGovernanceActions(through, GOV, realm)).toEqual(decodeGovernanceActions(tx, GOV, realm).map((a) => ({ ...a, instructionIndex: (a.instructionIndex + 1) * INNER_KEY_BASE })));
  });
});

describe('SPL Governance decoders (recorded proposal and votes)', () => {
  it('decodes CreateProposal: realm, governance, proposal, name; the proposer from the token owner record', () => {
    const { tx, accounts } = load('create_proposal');
    const realm = realmOf(tx);
    const actions = decodeGovernanceActions(tx, GOV, realm);
    const created = actions.find((a) => a.kind === 'create_proposal');
    expect(created).toMatchObject({ kind: 'create_proposal', name: 'Fund the grants programme' });
    if (created?.kind !== 'create_proposal') throw new Error('no proposal');
    expect(decodeTokenOwner(accounts[created.tokenOwnerRecord] as Buffer, GOV, created.tokenOwnerRecord)).toBe(tx.accountKeys[0]);
    expect(Object.keys(accounts)).toContain(created.proposal);
    expect(decodeGovernanceActions(tx, GOV, PublicKey.unique().toBase58())).toEqual([]);
  });

  it('decodes an approve vote, its weight from the vote record, and the proposal it tipped to Succeeded', () => {
    const { tx, accounts } = load('cast_vote_approve');
    const [vote] = decodeGovernanceActions(tx, GOV, realmOf(tx));
    expect(vote).toMatchObject({ kind: 'cast_vote', vote: 'approve' });
    if (vote?.kind !== 'cast_vote') throw new Error('no vote');
    expect(decodeVoteWeight(accounts[vote.voteRecord] as Buffer, GOV, vote.voteRecord)).toBe('600000000000');
    expect(decodeTokenOwner(accounts[vote.voterTokenOwnerRecord] as Buffer, GOV, vote.voterTokenOwnerRecord)).toBe(tx.accountKeys[0]);
    const proposal = decodeProposal(accounts[vote.proposal] as Buffer, GOV, vote.proposal);
    expect(proposal).toMatchObject({ state: 3, yesVotes: '600000000000', noVotes: '0' });
    expect(proposalOutcome(proposal.state)).toEqual({ event: 'dao.proposal_passed', state: 'succeeded' });
  });

  it('decodes a deny vote and the proposal it defeated', () => {
    const { tx, accounts } = load('cast_vote_deny');
    const [vote] = decodeGovernanceActions(tx, GOV, realmOf(tx));
    expect(vote).toMatchObject({ kind: 'cast_vote', vote: 'deny' });
    if (vote?.kind !== 'cast_vote') throw new Error('no vote');
    const proposal = decodeProposal(accounts[vote.proposal] as Buffer, GOV, vote.proposal);
    expect(proposal).toMatchObject({ state: 7, noVotes: '600000000000' });
    expect(proposalOutcome(proposal.state)).toEqual({ event: 'dao.proposal_failed', state: 'defeated' });
  });

  it('maps every proposal state: Succeeded/Executing/Completed pass, Defeated/Vetoed fail, the rest are no outcome', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => proposalOutcome(s)?.event ?? null)).toEqual([
      null, null, null, 'dao.proposal_passed', 'dao.proposal_passed', 'dao.proposal_passed', null, 'dao.proposal_failed', 'dao.proposal_passed', 'dao.proposal_failed',
    ]);
  });
});

describe('Raydium CPMM fee-collection decoder', () => {
  // Not recordable here: collect_protocol_fee/collect_fund_fee need Raydium's admin key, and the
  // pools this service creates (plain `initialize`) have no creator fee. Synthetic, per the IDL.
  it('reads the claimer, the pool and what each recipient account received', () => {
    const keys = Array.from({ length: 12 }, () => PublicKey.unique().toBase58());
    const [claimer, authority, pool, config, v0, v1, m0, m1, r0, r1] = keys as [string, string, string, string, string, string, string, string, string, string];
    const tx: HistoryTransaction = {
      signature: 'sig',
      slot: 1,
      blockTime: 1,
      err: null,
      accountKeys: keys,
      instructions: [{ programId: CPMM_MAINNET_PROGRAM_ID.toBase58(), accounts: [claimer, authority, pool, config, v0, v1, m0, m1, r0, r1], data: instructionDiscriminator('collect_creator_fee') }],
      innerInstructions: [],
      logs: [],
      preTokenBalances: [{ accountIndex: 8, mint: m0, owner: claimer, amount: '5' }],
      postTokenBalances: [
        { accountIndex: 8, mint: m0, owner: claimer, amount: '105' },
        { accountIndex: 9, mint: m1, owner: claimer, amount: '7' },
      ],
      preBalances: [],
      postBalances: [],
    };
    expect(decodeFeeCollections(tx, CPMM_MAINNET_PROGRAM_ID.toBase58(), pool)).toEqual([{ instructionIndex: 0, kind: 'creator', pool, claimer, amounts: { [m0]: '100', [m1]: '7' } }]);
    expect(decodeFeeCollections(tx, CPMM_MAINNET_PROGRAM_ID.toBase58(), config)).toEqual([]);
  });
});

describe('the cliff check (recorded escrow)', () => {
  it('reports what the cliff itself unlocked, even when the check runs long after it (downtime)', async () => {
    const { tx, accounts } = load('claim_v1');
    const escrow = escrowOf(tx);
    const data = accounts[escrow] as Buffer;
    const state = decodeVestingEscrow(data);
    const chain = { getAccountInfo: async () => ({ data, executable: false, lamports: 1, owner: JUPITER_LOCK_PROGRAM_ID }) } as unknown as ChainHistory;
    const watch = { id: 'w', launchId: 'l', kind: 'vesting', address: escrow, context: {}, cliffAt: Number(state.cliffTime) * 1000 };
    // Checked after every period: the periods' unlocks are not the cliff's.
    const late = Number(state.cliffTime + state.frequency * (state.numberOfPeriod + 1n)) * 1000;
    const outcome = await vestingHandler.scheduled?.(watch, chain, late);
    expect(outcome?.confirmed).toBe(true);
    expect(outcome?.events[0]?.data).toMatchObject({ vestingContract: escrow, cliffTime: expect.anything(), unlockedAmount: state.cliffUnlockAmount.toString() });
    expect(unlockedAt(state, BigInt(late / 1000))).toBe(escrowTotal(state));
    expect(escrowTotal(state)).not.toBe(state.cliffUnlockAmount);
    // Before the cliff: not yet, check again later.
    expect(await vestingHandler.scheduled?.(watch, chain, Number(state.cliffTime) * 1000 - 1000)).toMatchObject({ events: [], confirmed: false });
  });

  it('an escrow closed before the check (downtime across the cliff and the close): the cliff is reported from the watch', async () => {
    const { tx, accounts } = load('claim_v1');
    const escrow = escrowOf(tx);
    const state = decodeVestingEscrow(accounts[escrow] as Buffer);
    const gone = { getAccountInfo: async () => null } as unknown as ChainHistory;
    // The watch a launch gets keeps what the cliff unlocks next to the recipient.
    const schedule = { cliffTime: Number(state.cliffTime), frequencySeconds: Number(state.frequency), cliffUnlockAmount: state.cliffUnlockAmount.toString() };
    const [made] = watchesForLaunch({ vesting: { escrow, programId: LOCK, recipient: state.recipient.toBase58(), amount: escrowTotal(state).toString(), schedule } });
    expect(made?.context).toMatchObject({ recipient: state.recipient.toBase58(), cliffUnlocked: state.cliffUnlockAmount.toString() });
    const watch = { id: 'w', launchId: 'l', kind: 'vesting', address: escrow, context: made?.context ?? {}, cliffAt: made?.cliffAt ?? null };
    const late = Number(state.cliffTime + state.frequency * (state.numberOfPeriod + 1n)) * 1000;
    const outcome = await vestingHandler.scheduled?.(watch, gone, late);
    expect(outcome?.confirmed).toBe(true);
    expect(outcome?.events).toEqual([
      {
        event: 'vesting.cliff_reached',
        signature: escrow,
        instructionIndex: -1,
        data: { vestingContract: escrow, beneficiary: state.recipient.toBase58(), cliffTime: new Date(Number(state.cliffTime) * 1000).toISOString(), unlockedAmount: state.cliffUnlockAmount.toString() },
      },
    ]);
    // A schedule with frequency 0 unlocks everything at the cliff.
    const [allAtOnce] = watchesForLaunch({ vesting: { escrow, programId: LOCK, recipient: state.recipient.toBase58(), amount: '900', schedule: { ...schedule, frequencySeconds: 0 } } });
    expect(allAtOnce?.context).toMatchObject({ cliffUnlocked: '900' });
    // A watch that does not know what the cliff unlocks still reports the cliff, without the amount.
    const bare = await vestingHandler.scheduled?.({ ...watch, context: { recipient: state.recipient.toBase58() } }, gone, late);
    expect(bare?.events[0]?.data).toEqual({ vestingContract: escrow, beneficiary: state.recipient.toBase58(), cliffTime: new Date(Number(state.cliffTime) * 1000).toISOString() });
    // Gone before its cliff: nothing to report, and nothing left to check.
    expect(await vestingHandler.scheduled?.(watch, gone, Number(state.cliffTime) * 1000 - 1000)).toEqual({ events: [], confirmed: true });
  });
});
