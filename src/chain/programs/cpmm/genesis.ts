import { PublicKey } from '@solana/web3.js';
import { ACCOUNT_SIZE, AccountLayout, AccountState, MINT_SIZE, MintLayout, NATIVE_MINT, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { cpmmDeployment, type CpmmDeployment } from '../programIds.js';
import { rentExemptLamports } from '../rent.js';
import { AMM_CONFIG_SIZE, encodeAmmConfig } from './ammConfig.js';
import { ammConfigAddress } from './pdas.js';

/** An account the embedded chain writes at start: everything `setAccount` needs. */
export interface GenesisAccount {
  address: PublicKey;
  owner: PublicKey;
  lamports: bigint;
  data: Buffer;
  executable: boolean;
}

/** Mainnet's AmmConfig index 0 economics: 0.25% trade fee, 12% / 4% of it to protocol / fund, 0.15 SOL per pool. */
export const DEFAULT_AMM_CONFIG_FEES = {
  tradeFeeRate: 2_500n,
  protocolFeeRate: 120_000n,
  fundFeeRate: 40_000n,
  createPoolFee: 150_000_000n,
  creatorFeeRate: 0n,
} as const;

/**
 * The accounts a local chain needs before CPMM can create a pool, as a cluster already has them:
 * the AmmConfig at its PDA (index from the deployment, default 0) owned by the program, and the
 * compiled-in pool-fee receiver as an initialized wrapped-SOL token account (the program pays the
 * fee into it with a system transfer + `sync_native`). Pools are quoted in SOL, so the wrapped-SOL
 * mint is included too (clusters have it; an embedded chain may not — the backend skips accounts
 * that exist). Pass a different `programId` for devnet builds; the receiver follows from it.
 */
export function cpmmGenesisAccounts(
  programId: PublicKey,
  options: { deployment?: CpmmDeployment; fees?: Partial<typeof DEFAULT_AMM_CONFIG_FEES> } = {},
): GenesisAccount[] {
  const deployment = options.deployment ?? cpmmDeployment(programId);
  const fees = { ...DEFAULT_AMM_CONFIG_FEES, ...options.fees };
  const [configAddress, bump] = ammConfigAddress(programId, deployment.ammConfigIndex);
  const configData = encodeAmmConfig({
    bump,
    disableCreatePool: false,
    index: deployment.ammConfigIndex,
    ...fees,
    protocolOwner: deployment.admin,
    fundOwner: deployment.admin,
  });
  if (configData.length !== AMM_CONFIG_SIZE) throw new Error('AmmConfig encoding has the wrong size');

  const receiverRent = rentExemptLamports(ACCOUNT_SIZE);
  const receiverData = Buffer.alloc(ACCOUNT_SIZE);
  AccountLayout.encode(
    {
      mint: NATIVE_MINT,
      owner: deployment.admin,
      amount: 0n,
      delegateOption: 0,
      delegate: PublicKey.default,
      state: AccountState.Initialized,
      isNativeOption: 1,
      isNative: receiverRent,
      delegatedAmount: 0n,
      closeAuthorityOption: 0,
      closeAuthority: PublicKey.default,
    },
    receiverData,
  );
  const nativeMint = Buffer.alloc(MINT_SIZE);
  MintLayout.encode(
    { mintAuthorityOption: 0, mintAuthority: PublicKey.default, supply: 0n, decimals: 9, isInitialized: true, freezeAuthorityOption: 0, freezeAuthority: PublicKey.default },
    nativeMint,
  );
  return [
    { address: NATIVE_MINT, owner: TOKEN_PROGRAM_ID, lamports: rentExemptLamports(MINT_SIZE), data: nativeMint, executable: false },
    { address: configAddress, owner: programId, lamports: rentExemptLamports(AMM_CONFIG_SIZE), data: configData, executable: false },
    { address: deployment.createPoolFeeReceiver, owner: TOKEN_PROGRAM_ID, lamports: receiverRent, data: receiverData, executable: false },
  ];
}

/**
 * The embedded backend's genesis hook for CPMM (`EmbeddedBackendOptions.genesisHooks`): applied at
 * start when the program is loaded; existing accounts are left alone.
 */
export function cpmmGenesisHook(programId: PublicKey, deployment?: CpmmDeployment): { programId: PublicKey; accounts(): GenesisAccount[] } {
  return { programId, accounts: () => cpmmGenesisAccounts(programId, deployment ? { deployment } : {}) };
}
