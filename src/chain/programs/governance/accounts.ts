import { PublicKey, type AccountInfo } from '@solana/web3.js';
import { Governance, GovernanceAccountParser, Realm, VoteThresholdType } from '@solana/spl-governance';

/** The realm fields this service reads back. */
export interface RealmState {
  name: string;
  communityMint: PublicKey;
  authority: PublicKey | undefined;
  councilMint: PublicKey | undefined;
}

/** The governance fields this service reads back. */
export interface GovernanceState {
  realm: PublicKey;
  governedAccount: PublicKey;
  /** Community approval threshold in percent; undefined when not a yes-vote percentage. */
  yesVotePercent: number | undefined;
  votingTimeSeconds: number;
}

function asAccountInfo(owner: PublicKey, data: Uint8Array): AccountInfo<Buffer> {
  return { data: Buffer.from(data), owner, executable: false, lamports: 0 };
}

/** Decodes a Realm (v1 or v2) account owned by `programId`; throws on any other account. */
export function decodeRealm(programId: PublicKey, data: Uint8Array): RealmState {
  const parsed = GovernanceAccountParser(Realm)(PublicKey.default, asAccountInfo(programId, data)).account as Realm;
  return {
    name: parsed.name,
    communityMint: parsed.communityMint,
    authority: parsed.authority,
    councilMint: parsed.config.councilMint,
  };
}

/** Decodes a Governance (v1 or v2) account owned by `programId`; throws on any other account. */
export function decodeGovernance(programId: PublicKey, data: Uint8Array): GovernanceState {
  const parsed = GovernanceAccountParser(Governance)(PublicKey.default, asAccountInfo(programId, data)).account as Governance;
  const threshold = parsed.config.communityVoteThreshold;
  return {
    realm: parsed.realm,
    governedAccount: parsed.governedAccount,
    yesVotePercent: threshold.type === VoteThresholdType.YesVotePercentage ? threshold.value : undefined,
    votingTimeSeconds: parsed.config.baseVotingTime,
  };
}
