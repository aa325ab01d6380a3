import { createHash } from 'node:crypto';
import {
  ACCOUNT_SIZE,
  ASSOCIATED_TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createCloseAccountInstruction,
  createInitializeAccount3Instruction,
  getAssociatedTokenAddressSync,
  NATIVE_MINT,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { PublicKey, SystemProgram, type Connection, type TransactionInstruction } from '@solana/web3.js';

/**
 * The fees of a graduated curve's DAMM v2 position (docs/programs.md, "DAMM v2 position fees"):
 * what the position can claim, computed from the pool and the position exactly as the program's
 * `Position::update_fee` does, and the two transactions of a claim that pays the recipient in SOL.
 * Accounts are decoded and instructions encoded with Anchor over the DAMM v2 IDL that Meteora ships
 * in the DBC SDK (`createDammV2Program`); the SDK is loaded on first use, as the curve's is.
 */

type Sdk = typeof import('@meteora-ag/dynamic-bonding-curve-sdk');
let sdkLoad: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => (sdkLoad ??= import('@meteora-ag/dynamic-bonding-curve-sdk'));

/** The program's `LIQUIDITY_SCALE`: fee per liquidity is a Q128 fixed-point number. */
const LIQUIDITY_SCALE = 128n;
const U64_MAX = (1n << 64n) - 1n;

/** What a fee claim needs of a DAMM v2 pool. */
export interface DammPoolState {
  tokenAMint: PublicKey;
  tokenBMint: PublicKey;
  tokenAVault: PublicKey;
  tokenBVault: PublicKey;
  /** 0: SPL Token, 1: Token-2022. */
  tokenAFlag: number;
  tokenBFlag: number;
  /** Cumulative fee per unit of liquidity (Q128, the program's U256), per token. */
  feeAPerLiquidity: bigint;
  feeBPerLiquidity: bigint;
}

/** What a fee claim needs of a DAMM v2 position. */
export interface DammPositionState {
  pool: PublicKey;
  nftMint: PublicKey;
  feeAPerTokenCheckpoint: bigint;
  feeBPerTokenCheckpoint: bigint;
  feeAPending: bigint;
  feeBPending: bigint;
  unlockedLiquidity: bigint;
  vestedLiquidity: bigint;
  permanentLockedLiquidity: bigint;
}

/** A little-endian unsigned integer of any width (the program's `[u8; 32]` U256 fields). */
export function leUint(bytes: ArrayLike<number>): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i -= 1) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

/**
 * What `claim_position_fee` would pay now, per token: the pending fee plus the position's whole
 * liquidity (unlocked, vested and permanently locked) times the growth of the pool's fee per
 * liquidity since the position's checkpoint, shifted down by 128 bits (floor), as the program's
 * `safe_mul_shr_256_cast`. Exact in bigint; throws where the program would fail (a checkpoint
 * above the pool's, an amount past u64).
 */
export function pendingPositionFees(pool: Pick<DammPoolState, 'feeAPerLiquidity' | 'feeBPerLiquidity'>, position: DammPositionState): { a: bigint; b: bigint } {
  const liquidity = position.unlockedLiquidity + position.vestedLiquidity + position.permanentLockedLiquidity;
  const grown = (perLiquidity: bigint, checkpoint: bigint, pending: bigint): bigint => {
    if (liquidity === 0n) return pending;
    if (perLiquidity < checkpoint) throw new RangeError('the position checkpoint is above the pool fee per liquidity');
    const fresh = (liquidity * (perLiquidity - checkpoint)) >> LIQUIDITY_SCALE;
    if (fresh > U64_MAX) throw new RangeError('the position fee does not fit in u64');
    const total = pending + fresh;
    if (total > U64_MAX) throw new RangeError('the position fee does not fit in u64');
    return total;
  };
  return {
    a: grown(pool.feeAPerLiquidity, position.feeAPerTokenCheckpoint, position.feeAPending),
    b: grown(pool.feeBPerLiquidity, position.feeBPerTokenCheckpoint, position.feeBPending),
  };
}

/** An Anchor program over the DAMM v2 IDL that only encodes and decodes (it never reads the chain). */
function offlineProgram(sdk: Sdk) {
  return sdk.createDammV2Program({ rpcEndpoint: 'offline' } as unknown as Connection);
}

const big = (v: unknown): bigint => BigInt(String(v));
const bytes = (v: unknown): number[] => Array.from(v as ArrayLike<number>);

function decodePool(sdk: Sdk, data: Buffer): DammPoolState {
  const raw = offlineProgram(sdk).coder.accounts.decode('pool', data) as Record<string, unknown>;
  return {
    tokenAMint: raw.tokenAMint as PublicKey,
    tokenBMint: raw.tokenBMint as PublicKey,
    tokenAVault: raw.tokenAVault as PublicKey,
    tokenBVault: raw.tokenBVault as PublicKey,
    tokenAFlag: Number(raw.tokenAFlag),
    tokenBFlag: Number(raw.tokenBFlag),
    feeAPerLiquidity: leUint(bytes(raw.feeAPerLiquidity)),
    feeBPerLiquidity: leUint(bytes(raw.feeBPerLiquidity)),
  };
}

function decodePosition(sdk: Sdk, data: Buffer): DammPositionState {
  const raw = offlineProgram(sdk).coder.accounts.decode('position', data) as Record<string, unknown>;
  return {
    pool: raw.pool as PublicKey,
    nftMint: raw.nftMint as PublicKey,
    feeAPerTokenCheckpoint: leUint(bytes(raw.feeAPerTokenCheckpoint)),
    feeBPerTokenCheckpoint: leUint(bytes(raw.feeBPerTokenCheckpoint)),
    feeAPending: big(raw.feeAPending),
    feeBPending: big(raw.feeBPending),
    unlockedLiquidity: big(raw.unlockedLiquidity),
    vestedLiquidity: big(raw.vestedLiquidity),
    permanentLockedLiquidity: big(raw.permanentLockedLiquidity),
  };
}

const tokenProgramOf = (flag: number): PublicKey => (flag === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID);

/**
 * The wrapped-SOL account one claim of one position receives its SOL in: an account of the wallet
 * at an address derived from the wallet, the claim and the position (`createAccountWithSeed`), so a
 * re-signed claim makes the same account and no other claim of the wallet touches it.
 */
export function claimWsolAccount(owner: PublicKey, claimId: string, position: string): { address: PublicKey; seed: string } {
  const seed = createHash('sha256').update(`${claimId}:${position}`).digest('hex').slice(0, 32);
  // `PublicKey.createWithSeed` (async in web3.js 1.x): sha256(base ‖ seed ‖ program id).
  const address = new PublicKey(createHash('sha256').update(Buffer.concat([owner.toBuffer(), Buffer.from(seed), TOKEN_PROGRAM_ID.toBuffer()])).digest());
  return { address, seed };
}

/** Where each side of a position's claim lands: SOL in the claim's own wrapped-SOL account, a token in the recipient's associated account. */
export function claimTargets(args: { pool: DammPoolState; owner: PublicKey; recipient: PublicKey; claimId: string; position: string }): { a: PublicKey; b: PublicKey; wsol: { address: PublicKey; seed: string } } {
  const wsol = claimWsolAccount(args.owner, args.claimId, args.position);
  const side = (mint: PublicKey, flag: number) => (mint.equals(NATIVE_MINT) ? wsol.address : getAssociatedTokenAddressSync(mint, args.recipient, true, tokenProgramOf(flag)));
  return { a: side(args.pool.tokenAMint, args.pool.tokenAFlag), b: side(args.pool.tokenBMint, args.pool.tokenBFlag), wsol };
}

/**
 * The claim (first transaction), signed by the position's owner (the NFT holder: the curve's DBC
 * creator, the owner's funding wallet): open the claim's wrapped-SOL account (rent from the wallet),
 * the recipient's token account for the other side (idempotent), then `claim_position_fee`, which
 * takes no amount and pays everything pending at execution into them.
 */
async function buildClaimPositionFeeInstructions(sdk: Sdk, args: {
  pool: PublicKey;
  poolState: DammPoolState;
  position: PublicKey;
  nftAccount: PublicKey;
  owner: PublicKey;
  recipient: PublicKey;
  claimId: string;
  wsolRentLamports: number;
}): Promise<TransactionInstruction[]> {
  const { poolState: p, owner } = args;
  const targets = claimTargets({ pool: p, owner, recipient: args.recipient, claimId: args.claimId, position: args.position.toBase58() });
  const before: TransactionInstruction[] = [
    SystemProgram.createAccountWithSeed({ fromPubkey: owner, newAccountPubkey: targets.wsol.address, basePubkey: owner, seed: targets.wsol.seed, lamports: args.wsolRentLamports, space: ACCOUNT_SIZE, programId: TOKEN_PROGRAM_ID }),
    createInitializeAccount3Instruction(targets.wsol.address, NATIVE_MINT, owner, TOKEN_PROGRAM_ID),
  ];
  for (const [mint, flag, target] of [[p.tokenAMint, p.tokenAFlag, targets.a], [p.tokenBMint, p.tokenBFlag, targets.b]] as const) {
    if (!mint.equals(NATIVE_MINT)) before.push(createAssociatedTokenAccountIdempotentInstruction(owner, target, args.recipient, mint, tokenProgramOf(flag), ASSOCIATED_TOKEN_PROGRAM_ID));
  }
  const claim = await offlineProgram(sdk)
    .methods.claimPositionFee()
    .accountsStrict({
      poolAuthority: sdk.deriveDammV2PoolAuthority(),
      pool: args.pool,
      position: args.position,
      tokenAAccount: targets.a,
      tokenBAccount: targets.b,
      tokenAVault: p.tokenAVault,
      tokenBVault: p.tokenBVault,
      tokenAMint: p.tokenAMint,
      tokenBMint: p.tokenBMint,
      positionNftAccount: args.nftAccount,
      signer: owner,
      tokenAProgram: tokenProgramOf(p.tokenAFlag),
      tokenBProgram: tokenProgramOf(p.tokenBFlag),
      eventAuthority: sdk.deriveDammV2EventAuthority(),
      program: sdk.DAMM_V2_PROGRAM_ID,
    })
    .instruction();
  return [...before, claim];
}

/**
 * The payment (second transaction): the claim's wrapped-SOL account closed back into the wallet (its
 * rent and the claimed SOL), and a system transfer of exactly the claimed lamports to the recipient.
 */
export function buildPositionPaymentInstructions(args: { owner: PublicKey; wsolAccount: PublicKey; recipient: PublicKey; lamports: bigint }): TransactionInstruction[] {
  const out = [createCloseAccountInstruction(args.wsolAccount, args.owner, args.owner, [], TOKEN_PROGRAM_ID)];
  if (args.lamports > 0n) out.push(SystemProgram.transfer({ fromPubkey: args.owner, toPubkey: args.recipient, lamports: args.lamports }));
  return out;
}

/** The DAMM v2 half of the fee code, once the SDK is loaded. */
export interface DammKit {
  decodePool(data: Buffer): DammPoolState;
  decodePosition(data: Buffer): DammPositionState;
  buildClaimPositionFeeInstructions(args: Parameters<typeof buildClaimPositionFeeInstructions>[1]): Promise<TransactionInstruction[]>;
}

export async function dammKit(): Promise<DammKit> {
  const sdk = await loadSdk();
  return {
    decodePool: (data) => decodePool(sdk, data),
    decodePosition: (data) => decodePosition(sdk, data),
    buildClaimPositionFeeInstructions: (args) => buildClaimPositionFeeInstructions(sdk, args),
  };
}
