import { PublicKey, TransactionInstruction } from '@solana/web3.js';
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import {
  GovernanceConfig,
  MintMaxVoteWeightSource,
  PROGRAM_VERSION_V3,
  SetRealmAuthorityAction,
  VoteThreshold,
  VoteThresholdType,
  VoteTipping,
  withCreateGovernance,
  withCreateNativeTreasury,
  withCreateRealm,
  withSetRealmAuthority,
} from '@solana/spl-governance';
import BN from 'bn.js';
import { SPL_GOVERNANCE_PROGRAM_ID } from '../programIds.js';
import { daoAddresses, tokenOwnerRecordAddress, type DaoAddresses } from './pdas.js';

/** What the DAO step needs to know; amounts in raw token units. */
export interface DaoRequest {
  name: string;
  communityMint: PublicKey;
  decimals: number;
  /** Raw supply of the mint: sizes the proposal / governance-creation thresholds. */
  supply: bigint;
  votingPeriodSeconds: number;
  quorumPercent: number;
  payer: PublicKey;
  /** The payer's token account holding the treasury allocation. */
  payerToken: PublicKey;
  treasuryAmount: bigint;
  programId?: PublicKey;
}

/** Shortest voting time the governance builders accept. */
export const MIN_VOTING_SECONDS = 3600;

/** 1% of supply (at least one raw unit): the weight needed to create proposals or further governances. */
export function proposalThreshold(supply: bigint): bigint {
  const onePercent = supply / 100n;
  return onePercent > 0n ? onePercent : 1n;
}

/**
 * The governance rules: approval needs `quorumPercent` of the community's max vote weight (full
 * supply), voting lasts `votingPeriodSeconds`, strict tipping, no council, no veto, no hold-up.
 */
export function governanceConfig(request: Pick<DaoRequest, 'quorumPercent' | 'votingPeriodSeconds' | 'supply'>): GovernanceConfig {
  const { quorumPercent, votingPeriodSeconds } = request;
  if (!Number.isInteger(quorumPercent) || quorumPercent < 1 || quorumPercent > 100) {
    throw new RangeError('quorumPercent must be an integer 1..100');
  }
  if (!Number.isInteger(votingPeriodSeconds) || votingPeriodSeconds < MIN_VOTING_SECONDS || votingPeriodSeconds > 0xffff_ffff) {
    throw new RangeError(`votingPeriodSeconds must be an integer ${MIN_VOTING_SECONDS}..${0xffff_ffff}`);
  }
  const disabled = new VoteThreshold({ type: VoteThresholdType.Disabled });
  return new GovernanceConfig({
    communityVoteThreshold: new VoteThreshold({ type: VoteThresholdType.YesVotePercentage, value: quorumPercent }),
    minCommunityTokensToCreateProposal: new BN(proposalThreshold(request.supply).toString()),
    minInstructionHoldUpTime: 0,
    baseVotingTime: votingPeriodSeconds,
    communityVoteTipping: VoteTipping.Strict,
    minCouncilTokensToCreateProposal: new BN(1),
    councilVoteThreshold: disabled,
    councilVetoVoteThreshold: disabled,
    communityVetoVoteThreshold: disabled,
    councilVoteTipping: VoteTipping.Disabled,
    votingCoolOffTime: 0,
    depositExemptProposalCount: 10,
  });
}

/**
 * One transaction's worth of instructions (all signed by the payer alone): create the realm with
 * the payer as temporary authority, the governance (governed account = the mint), its native
 * treasury, the treasury's token account, move the treasury allocation there, and hand the realm
 * authority to the governance (checked: the program verifies it is a governance of this realm).
 */
export async function buildDaoInstructions(request: DaoRequest): Promise<{ instructions: TransactionInstruction[]; addresses: DaoAddresses }> {
  const programId = request.programId ?? SPL_GOVERNANCE_PROGRAM_ID;
  const addresses = daoAddresses(request.name, request.communityMint, programId);
  const config = governanceConfig(request);
  const ixs: TransactionInstruction[] = [];
  await withCreateRealm(
    ixs,
    programId,
    PROGRAM_VERSION_V3,
    request.name,
    request.payer,
    request.communityMint,
    request.payer,
    undefined,
    MintMaxVoteWeightSource.FULL_SUPPLY_FRACTION,
    new BN(proposalThreshold(request.supply).toString()),
  );
  // The realm authority signs, so the token owner record is not read; pass its PDA for form.
  const tokenOwnerRecord = tokenOwnerRecordAddress(addresses.realm, request.communityMint, request.payer, programId);
  await withCreateGovernance(
    ixs,
    programId,
    PROGRAM_VERSION_V3,
    addresses.realm,
    addresses.governedAccount,
    config,
    tokenOwnerRecord,
    request.payer,
    request.payer,
  );
  await withCreateNativeTreasury(ixs, programId, PROGRAM_VERSION_V3, addresses.governance, request.payer);
  ixs.push(
    createAssociatedTokenAccountIdempotentInstruction(request.payer, addresses.treasuryToken, addresses.nativeTreasury, request.communityMint),
  );
  if (request.treasuryAmount > 0n) {
    ixs.push(
      createTransferCheckedInstruction(
        request.payerToken,
        request.communityMint,
        addresses.treasuryToken,
        request.payer,
        request.treasuryAmount,
        request.decimals,
        [],
        TOKEN_PROGRAM_ID,
      ),
    );
  }
  withSetRealmAuthority(ixs, programId, PROGRAM_VERSION_V3, addresses.realm, request.payer, addresses.governance, SetRealmAuthorityAction.SetChecked);
  return { instructions: ixs, addresses };
}
