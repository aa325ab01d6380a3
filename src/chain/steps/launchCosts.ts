import { ExtensionType, getMintLen, MINT_SIZE, ACCOUNT_SIZE } from '@solana/spl-token';
import type { PublicKey } from '@solana/web3.js';
import type { ChainBackend } from '../backend.js';
import { OBSERVATION_STATE_SIZE, POOL_STATE_SIZE } from '../programs/cpmm/poolState.js';
import { VESTING_ESCROW_SIZE } from '../programs/jupiterLock/escrowAccount.js';
import { mintLenWithTokenMetadata } from '../programs/token2022/tokenMetadata.js';
import type { ProgramIds } from '../programs/programIds.js';
import { LAMPORTS_PER_SIGNATURE, estimateFee } from '../transaction.js';
import { splitSupply } from './allocations.js';
import { createPoolFee } from './balance.js';
import { GOVERNANCE_SIZES, tokenAccountSize } from './costs.js';
import { solToLamports } from './support.js';
import { CURVE_MIGRATION_SIGNATURES, curveAccounts, curveLockerAccounts, curveMigrationAccounts, curveOtherLamports } from './curveCosts.js';
import { cpmmPoolOf, curvePoolOf, type LaunchPlan, type StepName } from './types.js';

/**
 * Metaplex metadata account at its largest, which CreateMetadataAccountV3 allocates whole:
 * 1 + 32 + 32 + 4+32 + 4+10 + 4+200 + 2 + 1+(4+5*34) + 1 + 1 + 1 + 1+1 + 1+33 + 1+17 + 1+9 + 1+33.
 */
export const METAPLEX_METADATA_MAX_SIZE = 679;

/**
 * Metaplex's protocol fee for creating a metadata account (0.01 SOL): the program moves it from the
 * payer into the metadata account on top of its rent (docs/programs.md).
 */
export const METAPLEX_CREATE_FEE_LAMPORTS = 10_000_000;

/** An account a launch creates: who it is for, its size, and the rent that funds it. */
export interface PlannedAccount {
  role: string;
  bytes: number;
  rentLamports: number;
  /** Opened and closed inside the same transaction: needed at its peak, given back at once. */
  returned?: true;
}

/** What one step's transaction costs its payer. */
export interface StepCost {
  step: StepName;
  accounts: PlannedAccount[];
  /** Signatures of the transaction (the payer's and any derived signer's). */
  signatures: number;
  /** Lamports moved out besides rent and fees (Metaplex's create fee, the pool's quote SOL and creation fee), exact. */
  otherLamports: bigint;
}

/** What a plan costs, step by step; the same numbers the steps budget their sends with. Totals are exact bigints (a pool's quote SOL may pass 2^53 lamports). */
export interface LaunchCosts {
  steps: StepCost[];
  transactions: number;
  signatures: number;
  /** Base fees: 5 000 lamports a signature. */
  feeLamports: bigint;
  /** The compute-unit price under the backend's fee settings, at the compute limit. */
  priorityFeeLamports: bigint;
  poolQuoteLamports: bigint;
  rentLamports: bigint;
  /** The operator's fee (`LAUNCH_FEE_LAMPORTS`), paid in the first transaction. */
  operatorFeeLamports: bigint;
  /** Everything the payer must hold for the launch: rent, fees, the pool's SOL and fee, the operator's fee. */
  totalLamports: bigint;
}

/** The size the create_mint step funds: Token-2022 mints grow when their metadata is written. */
export function mintFundedSize(plan: LaunchPlan): { space: number; funded: number } {
  if (plan.tokenStandard !== 'token-2022') return { space: MINT_SIZE, funded: MINT_SIZE };
  const space = getMintLen([ExtensionType.MetadataPointer]);
  return { space, funded: mintLenWithTokenMetadata(space, { name: plan.name, symbol: plan.ticker, uri: plan.uri }) };
}

/** How many distinct holders distribute_supply opens token accounts for (the creator, and the payer for the rest). */
export function distributionHolders(plan: LaunchPlan, payer: PublicKey): number {
  const held = new Set(splitSupply(plan).map((s) => (s.held === 'creator' ? plan.creator : payer.toBase58())));
  return held.size;
}

/**
 * Every account each step of `steps` creates, with its size and rent, and every transaction's
 * signatures: the plan the steps execute, priced on `chain` (its rent and fee settings). A bonding
 * curve's graduation is counted unless `graduation` is false (a creator-signed curve: the owner's
 * funding wallet pays it, not the creator; docs/signing.md).
 */
export async function planLaunchCosts(
  chain: ChainBackend,
  plan: LaunchPlan,
  steps: readonly StepName[],
  payer: PublicKey,
  ids: Pick<ProgramIds, 'pool'>,
  options: { graduation?: boolean } = {},
): Promise<LaunchCosts> {
  const rent = (bytes: number) => chain.getMinimumBalanceForRentExemption(bytes);
  const account = async (role: string, bytes: number, returned = false): Promise<PlannedAccount> => ({
    role,
    bytes,
    rentLamports: await rent(bytes),
    ...(returned ? { returned: true as const } : {}),
  });
  const tokenAccount = tokenAccountSize(plan.tokenStandard);
  const costs: StepCost[] = [];
  for (const step of steps) {
    switch (step) {
      case 'create_mint':
        costs.push({ step, accounts: [await account('mint', mintFundedSize(plan).funded)], signatures: 2, otherLamports: BigInt(plan.operatorFee?.lamports ?? 0) });
        break;
      case 'create_metadata':
        // Token-2022 writes its metadata in create_mint; this step only checks it then.
        if (plan.tokenStandard === 'spl-token') costs.push({ step, accounts: [await account('metadata', METAPLEX_METADATA_MAX_SIZE)], signatures: 1, otherLamports: BigInt(METAPLEX_CREATE_FEE_LAMPORTS) });
        break;
      case 'distribute_supply': {
        const holders = distributionHolders(plan, payer);
        const accounts = [await account('creator_token_account', tokenAccount)];
        if (holders > 1) accounts.push(await account('payer_token_account', tokenAccount));
        costs.push({ step, accounts, signatures: 1, otherLamports: 0n });
        break;
      }
      case 'create_vesting':
        costs.push({ step, accounts: [await account('vesting_escrow', VESTING_ESCROW_SIZE), await account('vesting_escrow_token_account', tokenAccount)], signatures: 2, otherLamports: 0n });
        break;
      case 'create_dao':
        costs.push({
          step,
          accounts: [
            await account('realm', GOVERNANCE_SIZES.realm(plan.dao?.name ?? '')),
            await account('realm_config', GOVERNANCE_SIZES.realmConfig),
            await account('community_token_holding', ACCOUNT_SIZE),
            await account('governance', GOVERNANCE_SIZES.governance),
            await account('native_treasury', GOVERNANCE_SIZES.nativeTreasury),
            await account('treasury_token_account', ACCOUNT_SIZE),
          ],
          signatures: 1,
          otherLamports: 0n,
        });
        break;
      case 'create_pool': {
        const cpmm = cpmmPoolOf(plan);
        const quote = cpmm ? solToLamports(cpmm.quoteAmount) : 0n;
        costs.push({
          step,
          accounts: [
            await account('pool_state', POOL_STATE_SIZE),
            await account('pool_observation', OBSERVATION_STATE_SIZE),
            await account('lp_mint', MINT_SIZE),
            await account('pool_token_vault', tokenAccount),
            await account('pool_quote_vault', ACCOUNT_SIZE),
            await account('payer_lp_token_account', ACCOUNT_SIZE, true),
            await account('payer_wsol_account', ACCOUNT_SIZE, true),
            await account('creator_lp_token_account', ACCOUNT_SIZE),
          ],
          signatures: 1,
          otherLamports: quote + BigInt(await createPoolFee(chain, ids.pool)),
        });
        break;
      }
      case 'create_curve': {
        // Two transactions: the config (payer and config key), then the pool with the first buy (payer and mint key).
        const accounts = curveAccounts(plan);
        const curve = curvePoolOf(plan);
        const firstBuy = curve?.firstBuy ? solToLamports(curve.firstBuy.quoteAmount) : 0n;
        costs.push({ step, accounts: await Promise.all(accounts.config.map((a) => account(a.role, a.bytes))), signatures: 2, otherLamports: 0n });
        costs.push({
          step,
          accounts: await Promise.all(accounts.pool.map((a) => account(a.role, a.bytes, a.returned === true))),
          signatures: 2,
          otherLamports: BigInt(curveOtherLamports(plan)) + firstBuy,
        });
        // The graduation: sent by the service when the curve is full, paid by the owner's wallet.
        if (options.graduation === false) break;
        if (plan.vesting && plan.allocations.vesting > 0) {
          costs.push({ step, accounts: await Promise.all(curveLockerAccounts(plan).map((a) => account(a.role, a.bytes))), signatures: 1, otherLamports: 0n });
          costs.push({ step, accounts: [], signatures: 1, otherLamports: 0n });
        }
        costs.push({ step, accounts: await Promise.all(curveMigrationAccounts().map((a) => account(a.role, a.bytes))), signatures: CURVE_MIGRATION_SIGNATURES, otherLamports: 0n });
        break;
      }
    }
  }
  const signatures = costs.reduce((n, s) => n + s.signatures, 0);
  const feeLamports = BigInt(signatures * LAMPORTS_PER_SIGNATURE);
  const priorityFeeLamports = costs.reduce((n, s) => n + BigInt(estimateFee(chain.fees, s.signatures) - s.signatures * LAMPORTS_PER_SIGNATURE), 0n);
  const rentLamports = costs.reduce((n, s) => n + BigInt(s.accounts.reduce((m, a) => m + a.rentLamports, 0)), 0n);
  const cpmm = cpmmPoolOf(plan);
  // The SOL that goes into the pool: a CPMM pool's quote side, or a bonding curve's first buy.
  const poolQuoteLamports = (cpmm && steps.includes('create_pool') ? solToLamports(cpmm.quoteAmount) : 0n) + firstBuyOf(plan, steps);
  const other = costs.reduce((n, s) => n + s.otherLamports, 0n);
  return {
    steps: costs,
    transactions: costs.length,
    signatures,
    feeLamports,
    priorityFeeLamports,
    poolQuoteLamports,
    rentLamports,
    operatorFeeLamports: plan.operatorFee && steps.includes('create_mint') ? BigInt(plan.operatorFee.lamports) : 0n,
    totalLamports: rentLamports + feeLamports + priorityFeeLamports + other,
  };
}

function firstBuyOf(plan: LaunchPlan, steps: readonly StepName[]): bigint {
  const curve = curvePoolOf(plan);
  return curve?.firstBuy && steps.includes('create_curve') ? solToLamports(curve.firstBuy.quoteAmount) : 0n;
}

/** What one step's send budgets: its accounts' rent and what else it moves (the step's `rentLamports`). */
export function stepSpendLamports(cost: StepCost): bigint {
  return BigInt(cost.accounts.reduce((n, a) => n + a.rentLamports, 0)) + cost.otherLamports;
}
