import { PublicKey } from '@solana/web3.js';
import { NonRetriableError } from '../../lib/retry.js';
import { DBC_PROGRAM_ID, METAPLEX_TOKEN_METADATA_PROGRAM_ID } from '../programs/programIds.js';
import { curveAddresses, curveKit, curveLockedVesting, decimalSolToLamports, graduationQuoteLamports } from '../programs/dbc/curve.js';
import { curveLaunchCosts } from './curveCosts.js';
import { planKey, requireProgram, sendOnce } from './support.js';
import { curvePoolOf, type StepContext, type StepExecutor } from './types.js';

/**
 * create_curve: a `pool.kind: "bonding-curve"` launch on Meteora's Dynamic Bonding Curve, in two
 * transactions: the curve's config (its key is the launch's derived `base` key), then the pool,
 * whose creation makes the mint (the launch's derived mint key) with its metadata and the whole
 * supply in the curve's vault, with the creator's first buy in the same transaction. Every address
 * follows from the two derived keys, so it is fixed before the first send. The payer is the curve's
 * DBC creator and partner (it signs and later claims fees): the owner's funding wallet, or on a
 * creator-signed launch the creator itself (docs/signing.md); the customer's `creator` receives the
 * first buy and the leftover. Result: `{mint, pool: {kind, address, config,
 * baseVault, quoteVault, graduationQuoteLamports}, firstBuy}` (docs/programs.md).
 */
export const createCurve: StepExecutor = async (ctx) => {
  const { plan, chain, keys } = ctx;
  const pool = curvePoolOf(plan);
  if (!pool) throw new NonRetriableError('invalid_configuration', 'create_curve needs a bonding-curve pool section');
  await requireProgram(chain, DBC_PROGRAM_ID, 'Meteora Dynamic Bonding Curve');
  if (plan.tokenStandard === 'spl-token') await requireProgram(chain, METAPLEX_TOKEN_METADATA_PROGRAM_ID, 'Metaplex Token Metadata');
  // The SDK brings Anchor (about a second to import): loaded by the launches that need it only.
  const dbc = await curveKit();
  let params;
  try {
    params = dbc.curveConfigParameters({ tokenStandard: plan.tokenStandard, decimals: plan.decimals, totalSupply: plan.totalSupply, pool, lockedVesting: curveLockedVesting(plan) });
  } catch (cause) {
    throw new NonRetriableError('invalid_configuration', `the curve cannot be built: ${(cause as Error).message}`, { cause });
  }
  const payer = ctx.payer.publicKey;
  const creator = planKey(plan.creator, 'creator');
  const mint = keys.mint.publicKey;
  const addresses = curveAddresses({ config: keys.base.publicKey, mint, payer, creator, tokenStandard: plan.tokenStandard });
  const firstBuyLamports = pool.firstBuy ? decimalSolToLamports(pool.firstBuy.quoteAmount) : 0n;
  const threshold = graduationQuoteLamports(params);
  if (firstBuyLamports >= threshold) {
    throw new NonRetriableError('invalid_configuration', `the first buy (${firstBuyLamports} lamports) would fill the curve, which graduates at ${threshold}`);
  }
  const built = await dbc.buildCreateCurveInstructions({
    params,
    addresses,
    mint,
    payer,
    creator,
    tokenStandard: plan.tokenStandard,
    name: plan.name,
    symbol: plan.ticker,
    uri: plan.uri,
    firstBuyLamports,
  });
  const costs = await curveLaunchCosts((size) => chain.getMinimumBalanceForRentExemption(size), plan);

  const configSent = await sendOnce(ctx, {
    label: 'create_curve_config',
    type: 'curve_config',
    instructions: () => built.config,
    signers: [keys.base],
    rentLamports: costs.config,
    postcondition: () => ownedByDbc(ctx, addresses.config),
  });
  const poolSent = await sendOnce(ctx, {
    label: 'create_curve_pool',
    type: 'curve_pool',
    instructions: () => built.pool,
    signers: [keys.mint],
    rentLamports: costs.pool + Number(firstBuyLamports),
    postcondition: () => curveCreated(ctx, addresses.pool, dbc.decodeCurveState),
  });
  // Planning a creator-signed launch: nothing was sent; every address is fixed already.
  if (!ctx.capture && !(await curveCreated(ctx, addresses.pool, dbc.decodeCurveState))) {
    throw new NonRetriableError('program_error', `curve ${addresses.pool.toBase58()} is missing after its transaction`);
  }
  return {
    result: {
      mint: mint.toBase58(),
      pool: {
        kind: 'bonding-curve',
        address: addresses.pool.toBase58(),
        config: addresses.config.toBase58(),
        baseVault: addresses.baseVault.toBase58(),
        quoteVault: addresses.quoteVault.toBase58(),
        graduationQuoteLamports: threshold.toString(),
        programId: DBC_PROGRAM_ID.toBase58(),
      },
      firstBuy: firstBuyLamports > 0n ? { quoteLamports: firstBuyLamports.toString(), recipient: plan.creator, tokenAccount: addresses.creatorTokenAccount.toBase58() } : null,
    },
    transactions: [configSent, poolSent].flatMap((sent) => (sent ? [{ type: sent.type, signature: sent.signature }] : [])),
  };
};

async function ownedByDbc(ctx: StepContext, address: PublicKey): Promise<boolean> {
  const info = await ctx.chain.getAccountInfo(address);
  return info !== null && info.owner.equals(DBC_PROGRAM_ID);
}

/** Postcondition: our curve exists; one whose DBC creator is another wallet is a program error. */
async function curveCreated(ctx: StepContext, pool: PublicKey, decode: (data: Buffer) => { creator: PublicKey }): Promise<boolean> {
  const info = await ctx.chain.getAccountInfo(pool);
  if (!info || !info.owner.equals(DBC_PROGRAM_ID)) return false;
  const state = decode(info.data);
  if (!state.creator.equals(ctx.payer.publicKey)) {
    throw new NonRetriableError('program_error', `curve ${pool.toBase58()} was created by ${state.creator.toBase58()}, not by this launch's wallet`);
  }
  return true;
}
