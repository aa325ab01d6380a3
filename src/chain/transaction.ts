import { ComputeBudgetProgram, Transaction, type Keypair, type TransactionInstruction } from '@solana/web3.js';
import type { BlockhashInfo, ChainBackend, FeeSettings } from './backend.js';
import { signTransaction } from './ed25519.js';

/** Base fee per signature on every Solana cluster. */
export const LAMPORTS_PER_SIGNATURE = 5000;

/** Prepends the compute-budget instructions the backend's fee settings ask for. */
export function withComputeBudget(fees: FeeSettings, instructions: TransactionInstruction[]): TransactionInstruction[] {
  const budget: TransactionInstruction[] = [];
  if (fees.computeUnitLimit !== undefined) budget.push(ComputeBudgetProgram.setComputeUnitLimit({ units: fees.computeUnitLimit }));
  if (fees.priorityFeeMicroLamports > 0) {
    budget.push(ComputeBudgetProgram.setComputeUnitPrice({ microLamports: fees.priorityFeeMicroLamports }));
  }
  return [...budget, ...instructions];
}

/** Worst-case fee in lamports of a transaction with `signatures` signers under the fee settings. */
export function estimateFee(fees: FeeSettings, signatures: number): number {
  const units = fees.computeUnitLimit ?? DEFAULT_COMPUTE_UNITS;
  // With the price from the network, the estimate assumes its cap: the actual fee is never above it.
  const price = Math.max(fees.priorityFeeMicroLamports, fees.priorityFeeMaxMicroLamports ?? 0);
  return signatures * LAMPORTS_PER_SIGNATURE + Math.ceil((units * price) / 1_000_000);
}

/** The compute units estimates assume without SOLANA_COMPUTE_UNIT_LIMIT (a transaction's default budget). */
export const DEFAULT_COMPUTE_UNITS = 200_000;

/** Builds and signs a legacy transaction paid by `payer` under the backend's fee settings. */
export function buildSignedTransaction(
  chain: Pick<ChainBackend, 'fees'>,
  payer: Keypair,
  instructions: TransactionInstruction[],
  signers: Keypair[],
  blockhash: BlockhashInfo,
): Transaction {
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash: blockhash.blockhash, lastValidBlockHeight: blockhash.lastValidBlockHeight });
  tx.add(...withComputeBudget(chain.fees, instructions));
  // Native ed25519 (node:crypto) instead of web3.js's pure-JS signing on the event loop.
  signTransaction(tx, [payer, ...signers.filter((s) => !s.publicKey.equals(payer.publicKey))]);
  return tx;
}
