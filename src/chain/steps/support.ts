import { PublicKey, SYSVAR_CLOCK_PUBKEY } from '@solana/web3.js';
import { NonRetriableError } from '../../lib/retry.js';
import type { ChainBackend } from '../backend.js';
import { sendIdempotent, type IdempotentSend, type SendResult } from '../send.js';
import { splitSupply, type AllocationKind } from './allocations.js';
import type { StepContext } from './types.js';

/**
 * The base-unit amount of an allocation: as distribute_supply reported it in the results, else
 * as the same split computes it. A zero share is a configuration error for the step that needs it.
 */
export function allocationAmount(ctx: StepContext, kind: AllocationKind): bigint {
  const reported = ctx.results.allocations;
  if (Array.isArray(reported)) {
    const entry = reported.find((a: unknown) => (a as { kind?: unknown }).kind === kind) as { amount?: unknown } | undefined;
    if (entry && (typeof entry.amount === 'string' || typeof entry.amount === 'number')) return BigInt(entry.amount);
  }
  const share = splitSupply(ctx.plan).find((s) => s.kind === kind);
  if (!share) throw new NonRetriableError('invalid_configuration', `the ${kind} allocation is zero`);
  return share.amount;
}

/** Fails the launch with `chain_capability_missing` when `programId` is not executable on the chain. */
export async function requireProgram(chain: ChainBackend, programId: PublicKey, name: string): Promise<void> {
  if (!(await chain.isProgramExecutable(programId))) {
    throw new NonRetriableError(
      'chain_capability_missing',
      `${name} (${programId.toBase58()}) is not executable on the configured chain; ` +
        `for the embedded chain run \`solana program dump -u m ${programId.toBase58()} ${programId.toBase58()}.so\` into CHAIN_PROGRAMS_DIR`,
    );
  }
}

/**
 * {@link sendIdempotent}, except that a step whose effect is already on chain with no transaction
 * recorded (results lost after completion, or created by an earlier run) sends nothing: the
 * creating instructions would fail on the existing accounts. Returns null in that case.
 */
export async function sendOnce(ctx: StepContext, spec: IdempotentSend): Promise<SendResult | null> {
  if (ctx.capture) {
    // Planning a creator-signed launch: the transaction is built for signing, nothing is sent.
    ctx.capture({ label: spec.label, type: spec.type, instructions: spec.instructions(), signers: spec.signers, rentLamports: spec.rentLamports });
    return null;
  }
  if (ctx.pending[spec.label] === undefined && (await spec.postcondition())) {
    ctx.logger.info({ tx: spec.label }, 'effect already on chain; nothing to send');
    return null;
  }
  return sendIdempotent(ctx, spec);
}

/** The chain's unix time from the Clock sysvar (no wall clock in step logic). */
export async function chainUnixTime(chain: ChainBackend): Promise<bigint> {
  const clock = await chain.getAccountInfo(SYSVAR_CLOCK_PUBKEY);
  if (!clock || clock.data.length < 40) throw new NonRetriableError('program_error', 'the chain has no Clock sysvar');
  return clock.data.readBigInt64LE(32);
}

/** Parses a decimal SOL amount ("5", "0.25") into lamports; at most 9 decimals, positive. */
export function solToLamports(amount: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,9}))?$/.exec(amount.trim());
  if (!match) throw new NonRetriableError('invalid_configuration', `"${amount}" is not a decimal SOL amount with at most 9 decimals`);
  const lamports = BigInt(match[1] ?? '0') * 1_000_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
  if (lamports <= 0n) throw new NonRetriableError('invalid_configuration', 'the quote amount must be positive');
  return lamports;
}

/** A base58 key from the plan, or `invalid_configuration` naming the field. */
export function planKey(value: string, field: string): PublicKey {
  try {
    return new PublicKey(value);
  } catch (cause) {
    throw new NonRetriableError('invalid_configuration', `${field} is not a valid public key`, { cause });
  }
}
