import type { Logger } from '../../lib/logger.js';
import type { ChainBackend } from '../backend.js';
import type { Keypair, PublicKey, TransactionInstruction } from '@solana/web3.js';
import type { LaunchKeys } from '../keys.js';
import type { CurvePoolPlan } from '../programs/dbc/curve.js';

export type { CurvePoolPlan };

/** Every step a launch can have, in the order the runner executes them (docs/events.md). */
export const STEP_ORDER = ['create_mint', 'create_metadata', 'distribute_supply', 'create_vesting', 'create_dao', 'create_pool', 'create_curve'] as const;
/** The one name of a launch step, shared by the launch bookkeeping and the chain executors. */
export type StepName = (typeof STEP_ORDER)[number];

/** What a launch asks the chain for (validated request, amounts parsed). */
export interface LaunchPlan {
  launchId: string;
  name: string;
  ticker: string;
  uri: string;
  decimals: number;
  /** Whole tokens. */
  totalSupply: bigint;
  tokenStandard: 'spl-token' | 'token-2022';
  /** Base58 pubkey receiving the creator allocation and, unless revoked, the authorities. */
  creator: string;
  /** Percents summing to 100. */
  allocations: { creator: number; vesting: number; treasury: number; pool: number };
  revokeMintAuthority: boolean;
  vesting?: { beneficiary: string; cliffSeconds: number; periodSeconds: number; periods: number; cliffUnlockPercent?: number | undefined };
  dao?: { name: string; votingPeriodSeconds: number; quorumPercent: number };
  /** A Raydium CPMM pool (quoteAmount: decimal SOL) or a Meteora bonding curve (docs/programs.md). */
  pool?: CpmmPoolPlan | CurvePoolPlan;
  /** Where creator fees go (bonding curves): `creator`, `treasury` or a base58 address. */
  fees?: { recipient: string; autoClaimMinLamports?: string | undefined };
  /** The operator's fee, paid to `recipient` in the launch's first transaction (fixed when the launch was created). */
  operatorFee?: { lamports: number; recipient: string };
}

/** `pool` of a CPMM launch (the default kind). */
export interface CpmmPoolPlan {
  kind?: 'cpmm' | undefined;
  quoteMint: string;
  quoteAmount: string;
}

/** The plan's CPMM pool section, or undefined (none, or a bonding curve). */
export function cpmmPoolOf(plan: Pick<LaunchPlan, 'pool'>): CpmmPoolPlan | undefined {
  return plan.pool && plan.pool.kind !== 'bonding-curve' ? plan.pool : undefined;
}

/** The plan's bonding-curve section, or undefined. */
export function curvePoolOf(plan: Pick<LaunchPlan, 'pool'>): CurvePoolPlan | undefined {
  return plan.pool?.kind === 'bonding-curve' ? plan.pool : undefined;
}

/** A signed transaction recorded before it is sent (docs/api.md). */
export interface PendingTx {
  signature: string;
  blockhash: string;
  lastValidBlockHeight: number;
  /** Base64 of the signed wire bytes; re-sent as is while the blockhash is valid. */
  serialized: string;
  /** Every signature the step signed before this one (oldest first): any of them may be the one that landed. */
  earlier?: Array<{ signature: string; lastValidBlockHeight: number }>;
  /** The compute budget it was signed with, when it came from the network (price in micro-lamports per unit, unit limit). */
  computeBudget?: { priorityFeeMicroLamports: number; computeUnitLimit: number | undefined };
}

/** A payer the service holds no key of (the creator of a creator-signed launch). */
export interface PublicPayer {
  readonly publicKey: PublicKey;
}

/** A transaction a step would send, as planning captures it (docs/signing.md). */
export interface CapturedSend {
  label: string;
  type: string;
  instructions: TransactionInstruction[];
  /** Signers besides the payer (keys the service derives for the launch). */
  signers: Keypair[];
  rentLamports: number;
}

/** A fully signed creator-signed transaction: its durable nonce and its wire bytes (base64). */
export interface SignedTx {
  signature: string;
  serialized: string;
  nonceAccount: string;
  nonce: string;
}

/** Everything a step needs; the runner builds it per attempt. */
export interface StepContext {
  plan: LaunchPlan;
  keys: LaunchKeys;
  /** Merged results of the earlier steps. */
  results: Record<string, unknown>;
  /** Transactions of THIS step recorded by earlier attempts, by label. */
  pending: Record<string, PendingTx>;
  /** Persists a signed transaction; resolves only once it is durable. Called before sending. */
  recordPending(label: string, tx: PendingTx): Promise<void>;
  chain: ChainBackend;
  /**
   * Pays every transaction of the launch (fees, rent, the pool's quote SOL) and holds the
   * undistributed allocations: the owner's funding wallet, or the service's payer for a launch
   * created before funding existed. A creator-signed launch's payer is the creator, whose key the
   * service never holds: only its public key, and the step's transactions come from `signed`.
   */
  payer: Keypair | PublicPayer;
  /**
   * Planning a creator-signed launch (docs/signing.md): each transaction a step would send is handed
   * here instead of being signed and sent; the step's chain reads after its send are skipped.
   */
  capture?: ((spec: CapturedSend) => void) | undefined;
  /** Landing a creator-signed launch: the transactions the creator signed, by label; sent as they are, never re-signed. */
  signed?: Record<string, SignedTx> | undefined;
  /**
   * What the launch may still spend of its reservation (owner-funded launches); a send that could
   * need more fails before anything is signed. Decremented by each send.
   */
  budget?: { remainingLamports: bigint } | undefined;
  logger: Logger;
}

/** A completed step: its result (merged into the launch's results) and its signatures. */
export interface StepOutcome {
  result: Record<string, unknown>;
  transactions: Array<{ type: string; signature: string }>;
  /**
   * Lamports the payer really spent in each of `transactions`, read from the chain (fee payer's
   * balance before minus after); set by the step runner, not by the executors.
   */
  spent?: Array<{ signature: string; lamports: bigint }>;
}

/** Runs one step to completion, idempotently: safe to call again after any crash. */
export type StepExecutor = (ctx: StepContext) => Promise<StepOutcome>;

/** A program a plan needs on the configured chain (for the 422 `chain_capability_missing` pre-check). */
export interface RequiredProgram {
  name: string;
  programId: string;
  reason: string;
}

/** What a launch needs that the chain lacks, and the one line that says so (`422 chain_capability_missing`). */
export interface CapabilityGap {
  missing: RequiredProgram[];
  line: string;
}
