import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { SPL_GOVERNANCE_PROGRAM_ID } from '../programIds.js';

/** Realm names are PDA seeds, so at most 32 bytes of UTF-8. */
export const MAX_REALM_NAME_BYTES = 32;

const pda = (seeds: Buffer[], programId: PublicKey): PublicKey => PublicKey.findProgramAddressSync(seeds, programId)[0];

/** Realm: ["governance", name]. The name alone decides the address, program-wide. */
export function realmAddress(name: string, programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID): PublicKey {
  const seed = Buffer.from(name, 'utf8');
  if (seed.length === 0 || seed.length > MAX_REALM_NAME_BYTES) {
    throw new RangeError(`realm name must be 1..${MAX_REALM_NAME_BYTES} bytes of UTF-8`);
  }
  return pda([Buffer.from('governance'), seed], programId);
}

/** The realm's holding account for deposited governing tokens: ["governance", realm, mint]. */
export function tokenHoldingAddress(realm: PublicKey, mint: PublicKey, programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID): PublicKey {
  return pda([Buffer.from('governance'), realm.toBuffer(), mint.toBuffer()], programId);
}

/** The realm's config account (v3): ["realm-config", realm]. */
export function realmConfigAddress(realm: PublicKey, programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID): PublicKey {
  return pda([Buffer.from('realm-config'), realm.toBuffer()], programId);
}

/** A governance: ["account-governance", realm, governedAccount]. */
export function governanceAddress(realm: PublicKey, governedAccount: PublicKey, programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID): PublicKey {
  return pda([Buffer.from('account-governance'), realm.toBuffer(), governedAccount.toBuffer()], programId);
}

/** A governance's native (SOL) treasury: ["native-treasury", governance], a system account. */
export function nativeTreasuryAddress(governance: PublicKey, programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID): PublicKey {
  return pda([Buffer.from('native-treasury'), governance.toBuffer()], programId);
}

/** A voter's token owner record: ["governance", realm, mint, owner]. */
export function tokenOwnerRecordAddress(
  realm: PublicKey,
  mint: PublicKey,
  owner: PublicKey,
  programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID,
): PublicKey {
  return pda([Buffer.from('governance'), realm.toBuffer(), mint.toBuffer(), owner.toBuffer()], programId);
}

/** The treasury's token account for the launched mint: the native treasury's associated token account. */
export function treasuryTokenAddress(nativeTreasury: PublicKey, mint: PublicKey, tokenProgram: PublicKey = TOKEN_PROGRAM_ID): PublicKey {
  return getAssociatedTokenAddressSync(mint, nativeTreasury, true, tokenProgram);
}

/** Every address a DAO for `name` and `mint` occupies, decided before anything is sent. */
export interface DaoAddresses {
  realm: PublicKey;
  realmConfig: PublicKey;
  communityTokenHolding: PublicKey;
  governance: PublicKey;
  governedAccount: PublicKey;
  nativeTreasury: PublicKey;
  treasuryToken: PublicKey;
}

/**
 * The DAO's addresses. The governed account is the launched mint: a fixed, launch-specific seed,
 * so the governance (and its treasury) address is known before the first transaction.
 */
export function daoAddresses(name: string, mint: PublicKey, programId: PublicKey = SPL_GOVERNANCE_PROGRAM_ID): DaoAddresses {
  const realm = realmAddress(name, programId);
  const governance = governanceAddress(realm, mint, programId);
  const nativeTreasury = nativeTreasuryAddress(governance, programId);
  return {
    realm,
    realmConfig: realmConfigAddress(realm, programId),
    communityTokenHolding: tokenHoldingAddress(realm, mint, programId),
    governance,
    governedAccount: mint,
    nativeTreasury,
    treasuryToken: treasuryTokenAddress(nativeTreasury, mint),
  };
}
