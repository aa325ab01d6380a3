import { PublicKey, type AccountInfo } from '@solana/web3.js';
import {
  CastVoteArgs,
  CreateProposalArgs,
  GovernanceAccountParser,
  GovernanceInstruction,
  Proposal,
  TokenOwnerRecord,
  VoteKind,
  VoteRecord,
  getGovernanceInstructionSchema,
} from '@solana/spl-governance';
import { deserializeBorsh } from '@solana/spl-governance/lib/tools/borsh.js';
import type { HistoryTransaction } from '../../chain/history.js';
import { allInstructions } from './instructions.js';

/** A governance instruction of interest in a transaction, with the accounts that identify it. */
export type GovernanceAction =
  | { kind: 'create_proposal'; instructionIndex: number; realm: string; governance: string; proposal: string; tokenOwnerRecord: string; name: string }
  | { kind: 'cast_vote'; instructionIndex: number; realm: string; governance: string; proposal: string; voterTokenOwnerRecord: string; voteRecord: string; vote: 'approve' | 'deny' | 'abstain' | 'veto' }
  | { kind: 'finalize_vote'; instructionIndex: number; realm: string; governance: string; proposal: string }
  | { kind: 'relinquish_vote'; instructionIndex: number; realm: string; governance: string; proposal: string };

const VOTES: Record<number, 'approve' | 'deny' | 'abstain' | 'veto'> = { [VoteKind.Approve]: 'approve', [VoteKind.Deny]: 'deny', [VoteKind.Abstain]: 'abstain', [VoteKind.Veto]: 'veto' };
const SCHEMA = getGovernanceInstructionSchema(3);

/**
 * The proposal lifecycle instructions a successful transaction runs on `realm`, top-level or invoked
 * by another program (keys: {@link allInstructions}) (SPL Governance v3
 * layouts; accounts as the program lists them: CreateProposal `[realm, proposal, governance,
 * token_owner_record, …]`, CastVote `[realm, governance, proposal, proposal_owner_record,
 * voter_token_owner_record, authority, vote_record, …]`, FinalizeVote `[realm, governance, proposal, …]`,
 * RelinquishVote `[realm, governance, proposal, …]`).
 */
export function decodeGovernanceActions(tx: HistoryTransaction, programId: string, realm: string): GovernanceAction[] {
  const actions: GovernanceAction[] = [];
  allInstructions(tx).forEach(({ ix, key: instructionIndex }) => {
    if (ix.programId !== programId || ix.accounts[0] !== realm || ix.data.length === 0) return;
    const a = ix.accounts;
    const data = Buffer.from(ix.data);
    switch (data[0]) {
      case GovernanceInstruction.CreateProposal: {
        const args = deserializeBorsh(SCHEMA, CreateProposalArgs, data) as CreateProposalArgs;
        actions.push({ kind: 'create_proposal', instructionIndex, realm, proposal: a[1] ?? '', governance: a[2] ?? '', tokenOwnerRecord: a[3] ?? '', name: args.name });
        return;
      }
      case GovernanceInstruction.CastVote: {
        const args = deserializeBorsh(SCHEMA, CastVoteArgs, data) as CastVoteArgs;
        const kind = args.vote?.voteType ?? (args.yesNoVote === 0 ? VoteKind.Approve : VoteKind.Deny);
        actions.push({ kind: 'cast_vote', instructionIndex, realm, governance: a[1] ?? '', proposal: a[2] ?? '', voterTokenOwnerRecord: a[4] ?? '', voteRecord: a[6] ?? '', vote: VOTES[kind] ?? 'approve' });
        return;
      }
      case GovernanceInstruction.FinalizeVote:
        actions.push({ kind: 'finalize_vote', instructionIndex, realm, governance: a[1] ?? '', proposal: a[2] ?? '' });
        return;
      case GovernanceInstruction.RelinquishVote:
        actions.push({ kind: 'relinquish_vote', instructionIndex, realm, governance: a[1] ?? '', proposal: a[2] ?? '' });
        return;
      default:
    }
  });
  return actions;
}

const info = (data: Uint8Array, owner: string): AccountInfo<Buffer> => ({ data: Buffer.from(data), owner: new PublicKey(owner), executable: false, lamports: 0, rentEpoch: 0 });

/** The proposal fields the events carry. `state` is the ProposalState number. */
export interface ProposalView {
  name: string;
  governance: string;
  state: number;
  yesVotes: string;
  noVotes: string;
}

/** Decodes a ProposalV2 account (state, name, approve weight of the first option, deny weight). */
export function decodeProposal(data: Uint8Array, programId: string, address: string): ProposalView {
  const parsed = GovernanceAccountParser(Proposal)(new PublicKey(address), info(data, programId)).account as Proposal;
  return {
    name: parsed.name,
    governance: parsed.governance.toBase58(),
    state: parsed.state,
    yesVotes: (parsed.options[0]?.voteWeight ?? parsed.yesVotesCount).toString(),
    noVotes: (parsed.denyVoteWeight ?? parsed.noVotesCount).toString(),
  };
}

/** The owner of a token owner record (the proposer or voter). */
export function decodeTokenOwner(data: Uint8Array, programId: string, address: string): string {
  return (GovernanceAccountParser(TokenOwnerRecord)(new PublicKey(address), info(data, programId)).account as TokenOwnerRecord).governingTokenOwner.toBase58();
}

/** A vote record's weight (raw governing-token units). */
export function decodeVoteWeight(data: Uint8Array, programId: string, address: string): string {
  const record = GovernanceAccountParser(VoteRecord)(new PublicKey(address), info(data, programId)).account as VoteRecord;
  return (record.voterWeight ?? record.voteWeight?.yes ?? record.voteWeight?.no)?.toString() ?? '0';
}

/** `passed` for Succeeded/Executing/Completed/ExecutingWithErrors, `failed` for Defeated/Vetoed, else undefined. */
export function proposalOutcome(state: number): { event: 'dao.proposal_passed' | 'dao.proposal_failed'; state: string } | undefined {
  const names: Record<number, string> = { 3: 'succeeded', 4: 'executing', 5: 'completed', 7: 'defeated', 8: 'executing_with_errors', 9: 'vetoed' };
  if ([3, 4, 5, 8].includes(state)) return { event: 'dao.proposal_passed', state: names[state] as string };
  if ([7, 9].includes(state)) return { event: 'dao.proposal_failed', state: names[state] as string };
  return undefined;
}
