import type { Connection, PublicKey, TransactionInstruction } from '@solana/web3.js';
import {
  ASSOCIATED_TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createCloseAccountInstruction,
  createSyncNativeInstruction,
  getAssociatedTokenAddressSync,
  NATIVE_MINT,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { PublicKey as PublicKeyClass, SystemProgram, SYSVAR_INSTRUCTIONS_PUBKEY } from '@solana/web3.js';
import BN from 'bn.js';
import type { ConfigParameters } from '@meteora-ag/dynamic-bonding-curve-sdk';
import { DBC_PROGRAM_ID, METAPLEX_TOKEN_METADATA_PROGRAM_ID } from '../programIds.js';
import { dbcPoolAddress, dbcPoolAuthority, dbcVaultAddress } from './pdas.js';

/**
 * The curve of a `pool.kind: "bonding-curve"` launch, built with Meteora's SDK. The SDK brings
 * Anchor (about a second of import), so it is loaded by {@link curveKit} only, when a launch needs
 * it; a static import would be hoisted into the service bundle's start. docs/programs.md says what
 * each request field becomes.
 */

type Sdk = typeof import('@meteora-ag/dynamic-bonding-curve-sdk');
let sdkLoad: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => (sdkLoad ??= import('@meteora-ag/dynamic-bonding-curve-sdk'));

/** The request's `pool` section for a bonding curve (amounts in whole SOL, decimal strings). */
export interface CurvePoolPlan {
  kind: 'bonding-curve';
  quoteMint: string;
  initialMarketCap: string;
  graduationMarketCap: string;
  graduationSupplyPercent: number;
  tradingFeeBps: number;
  creatorFeePercent: number;
  antiSniping: boolean;
  firstBuy?: { quoteAmount: string } | undefined;
}

/** What the curve needs of a launch plan. */
export interface CurvePlanInput {
  tokenStandard: 'spl-token' | 'token-2022';
  decimals: number;
  totalSupply: bigint;
  pool: CurvePoolPlan;
  /** Locked vesting (the request's `vesting` and `allocations.vesting`): DBC locks it through Jupiter Lock when the curve is full. */
  lockedVesting?: CurveLockedVesting | undefined;
}

/** A curve's locked vesting: whole tokens, counted from the curve's fill (docs/programs.md, "Graduation"). */
export interface CurveLockedVesting {
  amountTokens: bigint;
  cliffSeconds: number;
  periodSeconds: number;
  periods: number;
}

/** The locked vesting of a plan or request: `allocations.vesting` percent of the supply on the `vesting` schedule, or none. */
export function curveLockedVesting(plan: { totalSupply: bigint; allocations: { vesting: number }; vesting?: { cliffSeconds: number; periodSeconds: number; periods: number } | undefined }): CurveLockedVesting | undefined {
  if (!plan.vesting || plan.allocations.vesting <= 0) return undefined;
  return { amountTokens: (plan.totalSupply * BigInt(plan.allocations.vesting)) / 100n, cliffSeconds: plan.vesting.cliffSeconds, periodSeconds: plan.vesting.periodSeconds, periods: plan.vesting.periods };
}

/** Whole tokens that stay out of the curve and the AMM and go to the creator after graduation (the program needs some). */
export const CURVE_LEFTOVER_TOKENS = 1;
/** The anti-sniping schedule: the fee starts here and falls to `tradingFeeBps` over {@link ANTI_SNIPING_SECONDS}. */
export const ANTI_SNIPING_START_BPS = 9_900;
export const ANTI_SNIPING_SECONDS = 60;

/** DAMM v2 fee tiers a curve can graduate to, in bps, with DBC's `MigrationFeeOption` (FixedBps25 = 0 … FixedBps600 = 5). */
const MIGRATION_FEE_TIERS: Array<[number, number]> = [
  [600, 5],
  [400, 4],
  [200, 3],
  [100, 2],
  [30, 1],
  [25, 0],
];

/** The graduated pool's fee tier: the highest of DBC's fixed tiers not above the curve's trading fee. */
export function migrationFeeOption(tradingFeeBps: number): { option: number; bps: number } {
  const tier = MIGRATION_FEE_TIERS.find(([bps]) => bps <= tradingFeeBps) ?? MIGRATION_FEE_TIERS[MIGRATION_FEE_TIERS.length - 1]!;
  return { bps: tier[0], option: tier[1] };
}

/** Parses a positive decimal amount of SOL into lamports (at most 9 decimals). */
export function decimalSolToLamports(amount: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,9}))?$/.exec(amount);
  if (!match) throw new RangeError(`"${amount}" is not a decimal amount with at most 9 decimals`);
  return BigInt(match[1]!) * 1_000_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/**
 * The DBC config parameters of a plan: `buildCurveWithTwoSegments` from the market caps and the
 * graduation supply, the fee schedule, DAMM v2 as the migration target, the whole LP permanently
 * locked for the pool creator. Deterministic: the quote, the validation and the step build the same.
 * Throws (an Error from the SDK) when the program would refuse the parameters.
 */
function curveConfigParameters(sdk: Sdk, plan: CurvePlanInput): ConfigParameters {
  const { pool } = plan;
  const { ActivationType, BaseFeeMode, CollectFeeMode, MigrationOption, TokenAuthorityOption, TokenType } = sdk;
  const fee = pool.antiSniping
    ? { startingFeeBps: ANTI_SNIPING_START_BPS, endingFeeBps: pool.tradingFeeBps, numberOfPeriod: ANTI_SNIPING_SECONDS, totalDuration: ANTI_SNIPING_SECONDS }
    : { startingFeeBps: pool.tradingFeeBps, endingFeeBps: pool.tradingFeeBps, numberOfPeriod: 0, totalDuration: 0 };
  const params = sdk.buildCurveWithTwoSegments({
    token: {
      tokenType: plan.tokenStandard === 'token-2022' ? TokenType.Token2022 : TokenType.SPLToken,
      tokenBaseDecimal: plan.decimals,
      tokenQuoteDecimal: 9,
      tokenAuthorityOption: TokenAuthorityOption.Immutable,
      totalTokenSupply: Number(plan.totalSupply),
      leftover: CURVE_LEFTOVER_TOKENS,
    },
    fee: {
      baseFeeParams: { baseFeeMode: BaseFeeMode.FeeSchedulerExponential, feeSchedulerParam: fee },
      dynamicFeeEnabled: false,
      collectFeeMode: CollectFeeMode.QuoteToken,
      creatorTradingFeePercentage: pool.creatorFeePercent,
      poolCreationFee: 0,
      enableFirstSwapWithMinFee: true,
    },
    migration: {
      migrationOption: MigrationOption.MET_DAMM_V2,
      migrationFeeOption: migrationFeeOption(pool.tradingFeeBps).option,
      migrationFee: { feePercentage: 0, creatorFeePercentage: 0 },
    },
    liquidityDistribution: {
      partnerPermanentLockedLiquidityPercentage: 0,
      partnerLiquidityPercentage: 0,
      creatorPermanentLockedLiquidityPercentage: 100,
      creatorLiquidityPercentage: 0,
    },
    lockedVesting: plan.lockedVesting
      ? {
          totalLockedVestingAmount: Number(plan.lockedVesting.amountTokens),
          numberOfVestingPeriod: plan.lockedVesting.periods,
          cliffUnlockAmount: 0,
          totalVestingDuration: plan.lockedVesting.periods * plan.lockedVesting.periodSeconds,
          cliffDurationFromMigrationTime: plan.lockedVesting.cliffSeconds,
        }
      : { totalLockedVestingAmount: 0, numberOfVestingPeriod: 0, cliffUnlockAmount: 0, totalVestingDuration: 0, cliffDurationFromMigrationTime: 0 },
    activationType: ActivationType.Timestamp,
    initialMarketCap: Number(pool.initialMarketCap),
    migrationMarketCap: Number(pool.graduationMarketCap),
    percentageSupplyOnMigration: pool.graduationSupplyPercent,
  });
  // The SDK's own checks of what the program will accept; which receiver does not matter, only that there is one.
  sdk.validateConfigParameters({ ...params, leftoverReceiver: DBC_PROGRAM_ID });
  return params;
}

/** The quote reserve (lamports) at which the curve is full and graduates. */
export function graduationQuoteLamports(params: ConfigParameters): bigint {
  return BigInt(params.migrationQuoteThreshold.toString());
}

/** The addresses of a curve, all fixed by the config key and the mint. */
export interface CurveAddresses {
  config: PublicKey;
  pool: PublicKey;
  baseVault: PublicKey;
  quoteVault: PublicKey;
  poolAuthority: PublicKey;
  /** The payer's wrapped-SOL account for the first buy (opened and closed in the pool's transaction). */
  payerQuoteAccount: PublicKey;
  /** The creator's token account, which receives the first buy. */
  creatorTokenAccount: PublicKey;
}

export function curveAddresses(args: { config: PublicKey; mint: PublicKey; payer: PublicKey; creator: PublicKey; tokenStandard: 'spl-token' | 'token-2022' }): CurveAddresses {
  const pool = dbcPoolAddress(DBC_PROGRAM_ID, args.config, args.mint, NATIVE_MINT);
  const tokenProgram = args.tokenStandard === 'token-2022' ? TOKEN_2022_PROGRAM_ID : TOKEN_PROGRAM_ID;
  return {
    config: args.config,
    pool,
    baseVault: dbcVaultAddress(DBC_PROGRAM_ID, pool, args.mint),
    quoteVault: dbcVaultAddress(DBC_PROGRAM_ID, pool, NATIVE_MINT),
    poolAuthority: dbcPoolAuthority(DBC_PROGRAM_ID),
    payerQuoteAccount: getAssociatedTokenAddressSync(NATIVE_MINT, args.payer, true, TOKEN_PROGRAM_ID),
    creatorTokenAccount: getAssociatedTokenAddressSync(args.mint, args.creator, true, tokenProgram),
  };
}

/** An Anchor program over the SDK's IDL that only encodes instructions (it never reads the chain). */
function offlineProgram(sdk: Sdk) {
  const connection = { rpcEndpoint: 'offline' } as unknown as Connection;
  return sdk.createDbcProgram(connection).program;
}

/**
 * The two transactions' instructions: `create_config` (signed by the config key), then the pool's
 * creation with the mint and metadata the program creates, followed in the same transaction by
 * the creator's first buy (paid from the payer's wrapped SOL, tokens to the creator), so nobody can
 * buy before it. Two transactions because one would pass the 1232-byte limit with a long uri.
 */
async function buildCreateCurveInstructions(sdk: Sdk, args: {
  params: ConfigParameters;
  addresses: CurveAddresses;
  mint: PublicKey;
  payer: PublicKey;
  creator: PublicKey;
  tokenStandard: 'spl-token' | 'token-2022';
  name: string;
  symbol: string;
  uri: string;
  firstBuyLamports: bigint;
}): Promise<{ config: TransactionInstruction[]; pool: TransactionInstruction[] }> {
  const program = offlineProgram(sdk);
  const { addresses: a, payer, mint } = args;
  const config = await program.methods
    .createConfig(args.params)
    .accountsPartial({ config: a.config, feeClaimer: payer, leftoverReceiver: args.creator, quoteMint: NATIVE_MINT, payer })
    .instruction();
  const metadata = { name: args.name, symbol: args.symbol, uri: args.uri };
  const common = { pool: a.pool, config: a.config, payer, creator: payer, baseMint: mint, poolAuthority: a.poolAuthority, baseVault: a.baseVault, quoteVault: a.quoteVault, quoteMint: NATIVE_MINT, tokenQuoteProgram: TOKEN_PROGRAM_ID };
  const init =
    args.tokenStandard === 'token-2022'
      ? await program.methods.initializeVirtualPoolWithToken2022(metadata).accountsPartial({ ...common, tokenProgram: TOKEN_2022_PROGRAM_ID }).instruction()
      : await program.methods
          .initializeVirtualPoolWithSplToken(metadata)
          .accountsPartial({ ...common, mintMetadata: metaplexMetadataAddress(mint), metadataProgram: METAPLEX_TOKEN_METADATA_PROGRAM_ID, tokenProgram: TOKEN_PROGRAM_ID })
          .instruction();
  const pool = [init];
  if (args.firstBuyLamports > 0n) {
    const baseProgram = args.tokenStandard === 'token-2022' ? TOKEN_2022_PROGRAM_ID : TOKEN_PROGRAM_ID;
    const swap = await program.methods
      .swap({ amountIn: new BN(args.firstBuyLamports.toString()), minimumAmountOut: new BN(1) })
      .accountsPartial({
        baseMint: mint,
        quoteMint: NATIVE_MINT,
        pool: a.pool,
        baseVault: a.baseVault,
        quoteVault: a.quoteVault,
        config: a.config,
        poolAuthority: a.poolAuthority,
        referralTokenAccount: null,
        inputTokenAccount: a.payerQuoteAccount,
        outputTokenAccount: a.creatorTokenAccount,
        payer,
        tokenBaseProgram: baseProgram,
        tokenQuoteProgram: TOKEN_PROGRAM_ID,
      })
      // The instructions sysvar lets the program see the buy rides with the pool's creation (first swap at the minimum fee).
      .remainingAccounts([{ pubkey: SYSVAR_INSTRUCTIONS_PUBKEY, isSigner: false, isWritable: false }])
      .instruction();
    pool.push(
      createAssociatedTokenAccountIdempotentInstruction(payer, a.payerQuoteAccount, payer, NATIVE_MINT, TOKEN_PROGRAM_ID, ASSOCIATED_TOKEN_PROGRAM_ID),
      SystemProgram.transfer({ fromPubkey: payer, toPubkey: a.payerQuoteAccount, lamports: args.firstBuyLamports }),
      createSyncNativeInstruction(a.payerQuoteAccount, TOKEN_PROGRAM_ID),
      createAssociatedTokenAccountIdempotentInstruction(payer, a.creatorTokenAccount, args.creator, mint, baseProgram, ASSOCIATED_TOKEN_PROGRAM_ID),
      swap,
      createCloseAccountInstruction(a.payerQuoteAccount, payer, payer, [], TOKEN_PROGRAM_ID),
    );
  }
  return { config: [config], pool };
}

function metaplexMetadataAddress(mint: PublicKey): PublicKey {
  return PublicKeyClass.findProgramAddressSync([Buffer.from('metadata'), METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBuffer(), mint.toBuffer()], METAPLEX_TOKEN_METADATA_PROGRAM_ID)[0];
}

/** A curve's state as the step and the watcher read it. */
export interface CurveState {
  config: PublicKey;
  creator: PublicKey;
  baseMint: PublicKey;
  baseVault: PublicKey;
  quoteVault: PublicKey;
  quoteReserve: bigint;
  baseReserve: bigint;
  creatorQuoteFee: bigint;
  creatorBaseFee: bigint;
  partnerQuoteFee: bigint;
  /** 0 pre-bonding, 1 post-bonding, 2 locked vesting created, 3 migrated (the program's MigrationProgress). */
  migrationProgress: number;
  isMigrated: boolean;
}

/** Anchor's decoder of this IDL nests some accounts one level down (`{poolState: {...}}`). */
function unwrap(decoded: unknown): Record<string, unknown> {
  const record = decoded as Record<string, unknown>;
  const keys = Object.keys(record);
  return keys.length === 1 && typeof record[keys[0]!] === 'object' && !(record[keys[0]!] instanceof PublicKeyClass) ? (record[keys[0]!] as Record<string, unknown>) : record;
}

/** Decodes a DBC virtual pool account (the SDK's IDL, Anchor's coder). */
function decodeCurveState(sdk: Sdk, data: Buffer): CurveState {
  const raw = unwrap(offlineProgram(sdk).coder.accounts.decode('virtualPool', data));
  const big = (v: unknown) => BigInt(String(v));
  return {
    config: raw.config as PublicKey,
    creator: raw.creator as PublicKey,
    baseMint: raw.baseMint as PublicKey,
    baseVault: raw.baseVault as PublicKey,
    quoteVault: raw.quoteVault as PublicKey,
    quoteReserve: big(raw.quoteReserve),
    baseReserve: big(raw.baseReserve),
    creatorQuoteFee: big(raw.creatorQuoteFee),
    creatorBaseFee: big(raw.creatorBaseFee),
    partnerQuoteFee: big(raw.partnerQuoteFee),
    migrationProgress: Number(raw.migrationProgress),
    isMigrated: Number(raw.isMigrated) !== 0,
  };
}

/** What the graduation of a curve creates: the DAMM v2 pool and the curve creator's position (docs/programs.md). */
export interface CurveMigration {
  instructions: TransactionInstruction[];
  ammPool: PublicKey;
  dammConfig: PublicKey;
  /** The locked position DBC opens for the pool's creator (`first`) and, with partner liquidity, the partner's (`second`; none for our curves). */
  positions: Array<{ address: PublicKey; nftMint: PublicKey; nftAccount: PublicKey }>;
}

/**
 * `migration_damm_v2` of a full curve, as the SDK's `migrateToDammV2` builds it, with our own
 * position NFT keys (derived from the launch, so the addresses are fixed before the first send) and
 * the curve's config read from the chain (its fee tier picks the DAMM v2 config, its token types
 * the token programs). No migration metadata is created first: the program (0.1.x) and SDK 1.5 take
 * the metadata address without needing the account.
 */
async function buildMigrationInstructions(sdk: Sdk, args: {
  pool: PublicKey;
  state: CurveState;
  configData: Buffer;
  payer: PublicKey;
  firstNftMint: PublicKey;
  secondNftMint: PublicKey;
}): Promise<CurveMigration> {
  const program = offlineProgram(sdk);
  const config = unwrap(program.coder.accounts.decode('poolConfig', args.configData));
  const feeOption = Number(config.migrationFeeOption);
  const dammConfig = sdk.DAMM_V2_MIGRATION_FEE_ADDRESS[feeOption];
  if (!dammConfig) throw new Error(`curve config has migration fee option ${feeOption}, which has no DAMM v2 config`);
  const quoteMint = config.quoteMint as PublicKey;
  const baseMint = args.state.baseMint;
  const ammPool = sdk.deriveDammV2PoolAddress(dammConfig, baseMint, quoteMint);
  const position = (nftMint: PublicKey) => ({ address: sdk.derivePositionAddress(nftMint), nftMint, nftAccount: sdk.derivePositionNftAccount(nftMint) });
  const first = position(args.firstNftMint);
  const second = position(args.secondNftMint);
  const migrate = await program.methods
    .migrationDammV2()
    .accountsStrict({
      virtualPool: args.pool,
      migrationMetadata: sdk.deriveDammV2MigrationMetadataAddress(args.pool),
      config: args.state.config,
      poolAuthority: dbcPoolAuthority(DBC_PROGRAM_ID),
      pool: ammPool,
      firstPositionNftMint: first.nftMint,
      firstPosition: first.address,
      firstPositionNftAccount: first.nftAccount,
      secondPositionNftMint: second.nftMint,
      secondPosition: second.address,
      secondPositionNftAccount: second.nftAccount,
      dammPoolAuthority: sdk.deriveDammV2PoolAuthority(),
      ammProgram: sdk.DAMM_V2_PROGRAM_ID,
      baseMint,
      quoteMint,
      tokenAVault: sdk.deriveDammV2TokenVaultAddress(ammPool, baseMint),
      tokenBVault: sdk.deriveDammV2TokenVaultAddress(ammPool, quoteMint),
      baseVault: args.state.baseVault,
      quoteVault: args.state.quoteVault,
      payer: args.payer,
      tokenBaseProgram: Number(config.tokenType) === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID,
      tokenQuoteProgram: Number(config.quoteTokenFlag) === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID,
      token2022Program: TOKEN_2022_PROGRAM_ID,
      systemProgram: SystemProgram.programId,
      dammEventAuthority: sdk.deriveDammV2EventAuthority(),
    })
    .remainingAccounts([{ pubkey: dammConfig, isSigner: false, isWritable: false }])
    .instruction();
  // Only the first position exists when the partner has no liquidity (ours: all of it is the creator's, locked).
  const partnerShare = Number(config.partnerLiquidityPercentage ?? 0) + Number(config.partnerPermanentLockedLiquidityPercentage ?? 0) + Number(config.partnerLockedLiquidityPercentage ?? 0);
  return { instructions: [migrate], ammPool, dammConfig, positions: partnerShare > 0 ? [first, second] : [first] };
}

/**
 * The curve's creator trading fee, claimed by its DBC creator (the owner's funding wallet) and paid
 * on to `recipient` in SOL, in one transaction: the wallet's wrapped-SOL account receives exactly
 * `quoteLamports` (`claim_creator_trading_fee` takes a maximum, so the amount is the one read
 * before), is closed back into the wallet, and a system transfer pays the recipient. Our curves
 * collect fees in SOL only, so the base side claims 0 into the curve's own base vault (a
 * transfer of 0 to itself) unless `baseAmount` is positive, when it goes to the recipient's token
 * account (made if absent).
 */
async function buildClaimCreatorFeeInstructions(sdk: Sdk, args: {
  pool: PublicKey;
  state: CurveState;
  creator: PublicKey;
  recipient: PublicKey;
  quoteLamports: bigint;
  baseAmount: bigint;
  baseTokenProgram: PublicKey;
}): Promise<TransactionInstruction[]> {
  const program = offlineProgram(sdk);
  const { state, creator } = args;
  const wrapped = getAssociatedTokenAddressSync(NATIVE_MINT, creator, true, TOKEN_PROGRAM_ID);
  const before: TransactionInstruction[] = [createAssociatedTokenAccountIdempotentInstruction(creator, wrapped, creator, NATIVE_MINT, TOKEN_PROGRAM_ID, ASSOCIATED_TOKEN_PROGRAM_ID)];
  let baseAccount = state.baseVault;
  if (args.baseAmount > 0n) {
    baseAccount = getAssociatedTokenAddressSync(state.baseMint, args.recipient, true, args.baseTokenProgram);
    before.push(createAssociatedTokenAccountIdempotentInstruction(creator, baseAccount, args.recipient, state.baseMint, args.baseTokenProgram, ASSOCIATED_TOKEN_PROGRAM_ID));
  }
  const claim = await program.methods
    .claimCreatorTradingFee(new BN(args.baseAmount.toString()), new BN(args.quoteLamports.toString()))
    .accountsPartial({
      poolAuthority: dbcPoolAuthority(DBC_PROGRAM_ID),
      pool: args.pool,
      tokenAAccount: baseAccount,
      tokenBAccount: wrapped,
      baseVault: state.baseVault,
      quoteVault: state.quoteVault,
      baseMint: state.baseMint,
      quoteMint: NATIVE_MINT,
      creator,
      tokenBaseProgram: args.baseTokenProgram,
      tokenQuoteProgram: TOKEN_PROGRAM_ID,
    })
    .instruction();
  const after: TransactionInstruction[] = [createCloseAccountInstruction(wrapped, creator, creator, [], TOKEN_PROGRAM_ID)];
  if (args.quoteLamports > 0n) after.push(SystemProgram.transfer({ fromPubkey: creator, toPubkey: args.recipient, lamports: args.quoteLamports }));
  return [...before, claim, ...after];
}

/** The Jupiter Lock escrow DBC's `create_locker` makes for a curve with locked vesting (recipient: the curve's DBC creator). */
export interface CurveLocker {
  instructions: TransactionInstruction[];
  escrow: PublicKey;
  escrowToken: PublicKey;
}

/**
 * `create_locker` as the SDK's `createLocker` builds it: the escrow's token account (the program
 * needs it to exist; an idempotent create), then the instruction. Its base key and escrow are
 * PDAs of the curve, so they are fixed before the first send.
 */
async function buildLockerInstructions(sdk: Sdk, args: { pool: PublicKey; state: CurveState; configData: Buffer; payer: PublicKey }): Promise<CurveLocker> {
  const program = offlineProgram(sdk);
  const config = unwrap(program.coder.accounts.decode('poolConfig', args.configData));
  const tokenProgram = Number(config.tokenType) === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID;
  const base = sdk.deriveBaseKeyForLocker(args.pool);
  const escrow = sdk.deriveEscrow(base);
  const escrowToken = getAssociatedTokenAddressSync(args.state.baseMint, escrow, true, tokenProgram);
  const create = await program.methods
    .createLocker()
    .accountsPartial({
      virtualPool: args.pool,
      config: args.state.config,
      poolAuthority: dbcPoolAuthority(DBC_PROGRAM_ID),
      baseVault: args.state.baseVault,
      baseMint: args.state.baseMint,
      base,
      creator: args.state.creator,
      escrow,
      escrowToken,
      payer: args.payer,
      tokenProgram,
      lockerProgram: sdk.LOCKER_PROGRAM_ID,
      lockerEventAuthority: sdk.deriveLockerEventAuthority(),
      systemProgram: SystemProgram.programId,
    })
    .instruction();
  return {
    instructions: [createAssociatedTokenAccountIdempotentInstruction(args.payer, escrowToken, escrow, args.state.baseMint, tokenProgram, ASSOCIATED_TOKEN_PROGRAM_ID), create],
    escrow,
    escrowToken,
  };
}

/** The SDK-backed half of this module, once the SDK is loaded. */
export interface CurveKit {
  buildClaimCreatorFeeInstructions(args: Parameters<typeof buildClaimCreatorFeeInstructions>[1]): Promise<TransactionInstruction[]>;
  buildLockerInstructions(args: Parameters<typeof buildLockerInstructions>[1]): Promise<CurveLocker>;
  buildMigrationInstructions(args: Parameters<typeof buildMigrationInstructions>[1]): Promise<CurveMigration>;
  /** Throws (the SDK's Error) when the program would refuse the parameters. */
  curveConfigParameters(plan: CurvePlanInput): ConfigParameters;
  buildCreateCurveInstructions(args: Parameters<typeof buildCreateCurveInstructions>[1]): Promise<{ config: TransactionInstruction[]; pool: TransactionInstruction[] }>;
  decodeCurveState(data: Buffer): CurveState;
}

/** Loads the SDK (once per process) and binds the curve functions to it. */
export async function curveKit(): Promise<CurveKit> {
  const sdk = await loadSdk();
  return {
    curveConfigParameters: (plan) => curveConfigParameters(sdk, plan),
    buildCreateCurveInstructions: (args) => buildCreateCurveInstructions(sdk, args),
    decodeCurveState: (data) => decodeCurveState(sdk, data),
    buildMigrationInstructions: (args) => buildMigrationInstructions(sdk, args),
    buildClaimCreatorFeeInstructions: (args) => buildClaimCreatorFeeInstructions(sdk, args),
    buildLockerInstructions: (args) => buildLockerInstructions(sdk, args),
  };
}
