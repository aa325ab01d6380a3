import { PublicKey } from '@solana/web3.js';

/**
 * The one registry of the program ids this service calls beyond the embedded defaults (System,
 * SPL Token, Token-2022, Associated Token, which `@solana/spl-token` names). Steps, the capability
 * check and the embedded chain's genesis all read them from here.
 */

/** Metaplex Token Metadata (mainnet and devnet). */
export const METAPLEX_TOKEN_METADATA_PROGRAM_ID = new PublicKey('metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s');
/** Jupiter Lock (vesting escrows), the same id on mainnet and devnet. */
export const JUPITER_LOCK_PROGRAM_ID = new PublicKey('LocpQgucEQHbqNABEYvBvwoxCPsSbG91A1QaQhQQqjn');
/** SPL Governance, the canonical program-version-3 deployment. */
export const SPL_GOVERNANCE_PROGRAM_ID = new PublicKey('GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw');
/** Raydium CPMM (cp-swap) on mainnet-beta. */
export const CPMM_MAINNET_PROGRAM_ID = new PublicKey('CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C');
/** Raydium CPMM (cp-swap) on devnet. */
export const CPMM_DEVNET_PROGRAM_ID = new PublicKey('DRaycpLY18LhpbydsBWbVJtxpNv9oXPgjRSfpF2bWpYb');

/** Meteora Dynamic Bonding Curve (mainnet and devnet): `pool.kind: "bonding-curve"` launches. */
export const DBC_PROGRAM_ID = new PublicKey('dbcij3LWUppWqq96dh6gJWwBifmcGfLSB5D4DuSMaqN');
/** Meteora DAMM v2 (cp-amm, mainnet and devnet): where a bonding curve graduates to. */
export const DAMM_V2_PROGRAM_ID = new PublicKey('cpamdpZCGKUy5JxQXB4dcpGPiikHawvSWAd6mEn1sGG');

/**
 * Where a CPMM build sends its pool-creation fee. The receiver is compiled into each build
 * (`create_pool_fee_reveiver` in the program), so it follows from the program id.
 */
const CPMM_FEE_RECEIVERS: Record<string, string> = {
  [CPMM_MAINNET_PROGRAM_ID.toBase58()]: 'DNXgeM9EiiaAbaWvwjHj9fQQLAX5ZsfHyvmYUNRAdNC8',
  [CPMM_DEVNET_PROGRAM_ID.toBase58()]: '3oE58BKVt8KuYkGxx8zBojugnymWmBiyafWgMrnb6eYy',
};

/** The admin key compiled into each CPMM build (owner of its AmmConfig accounts). */
const CPMM_ADMINS: Record<string, string> = {
  [CPMM_MAINNET_PROGRAM_ID.toBase58()]: 'GThUX1Atko4tqhN2NaiTazWSeFWMuiUvfFnyJyUghFMJ',
  [CPMM_DEVNET_PROGRAM_ID.toBase58()]: 'DRayqG9RXYi8WHgWEmRQGrUWRWbhjYWYkCRJDd6JBBak',
};

/** A CPMM deployment: the program, the AmmConfig index pools are created under, its fee receiver. */
export interface CpmmDeployment {
  programId: PublicKey;
  ammConfigIndex: number;
  createPoolFeeReceiver: PublicKey;
  admin: PublicKey;
}

/**
 * The CPMM deployment for a program id. Known ids (mainnet, devnet) carry their compiled-in fee
 * receiver; any other id must name its receiver explicitly.
 */
export function cpmmDeployment(
  programId: PublicKey = CPMM_MAINNET_PROGRAM_ID,
  overrides: { ammConfigIndex?: number; createPoolFeeReceiver?: PublicKey; admin?: PublicKey } = {},
): CpmmDeployment {
  const receiver = overrides.createPoolFeeReceiver?.toBase58() ?? CPMM_FEE_RECEIVERS[programId.toBase58()];
  if (receiver === undefined) {
    throw new Error(`unknown CPMM program ${programId.toBase58()}: pass its createPoolFeeReceiver`);
  }
  const admin = overrides.admin?.toBase58() ?? CPMM_ADMINS[programId.toBase58()] ?? receiver;
  return {
    programId,
    ammConfigIndex: overrides.ammConfigIndex ?? 0,
    createPoolFeeReceiver: new PublicKey(receiver),
    admin: new PublicKey(admin),
  };
}

/** Program ids the steps use, as base58; each overridable (tests point one at an absent program). */
export interface ProgramIds {
  tokenMetadata: string;
  vesting: string;
  governance: string;
  pool: string;
  /** Meteora Dynamic Bonding Curve; fixed at the mainnet id (the instruction builders carry it). */
  curve: string;
  /** Meteora DAMM v2, which the curve's migration creates its pool on. */
  amm: string;
}

/** Mainnet defaults (Jupiter Lock, Governance and Token Metadata share ids with devnet; CPMM differs). */
export const DEFAULT_PROGRAM_IDS: ProgramIds = {
  tokenMetadata: METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58(),
  vesting: JUPITER_LOCK_PROGRAM_ID.toBase58(),
  governance: SPL_GOVERNANCE_PROGRAM_ID.toBase58(),
  pool: CPMM_MAINNET_PROGRAM_ID.toBase58(),
  curve: DBC_PROGRAM_ID.toBase58(),
  amm: DAMM_V2_PROGRAM_ID.toBase58(),
};

/** What each of those programs is called in messages. */
export const PROGRAM_NAMES: Record<keyof ProgramIds, string> = {
  tokenMetadata: 'Metaplex Token Metadata',
  vesting: 'Jupiter Lock',
  governance: 'SPL Governance',
  pool: 'Raydium CPMM',
  curve: 'Meteora Dynamic Bonding Curve',
  amm: 'Meteora DAMM v2',
};
