import { PublicKey, SystemProgram, TransactionInstruction } from '@solana/web3.js';
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createCloseAccountInstruction,
  createSyncNativeInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  NATIVE_MINT,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import type { CpmmDeployment } from '../programIds.js';
import { initialLpAmount, initializeInstruction, poolAddresses, type PoolAddresses, type PoolSide } from './initialize.js';
import { orderMints } from './pdas.js';

/** A SOL-quoted pool for a launched token; amounts raw (token base units, lamports). */
export interface CreatePoolRequest {
  deployment: CpmmDeployment;
  payer: PublicKey;
  mint: PublicKey;
  mintTokenProgram: PublicKey;
  /** The payer's account holding the pool allocation. */
  payerToken: PublicKey;
  tokenAmount: bigint;
  quoteLamports: bigint;
  /** Who ends up holding the LP tokens (the launch's creator). */
  lpRecipient: PublicKey;
}

/** The instructions and every address they touch, plus the LP amount the recipient receives. */
export interface CreatePoolPlan {
  instructions: TransactionInstruction[];
  addresses: PoolAddresses & { token0: PublicKey; token1: PublicKey; payerWsol: PublicKey; recipientLpToken: PublicKey };
  lpAmount: bigint;
}

/**
 * One transaction, signed by the payer: wrap `quoteLamports` into the payer's WSOL account, create
 * the pool with both mints in program order, then move all LP tokens to the recipient's LP account
 * and close the payer's emptied WSOL and LP accounts (their rent returns to the payer). The program
 * always mints LP to the signer's ATA; the transfer in the same transaction means the service's
 * hot wallet never holds the customer's liquidity, even for a moment between transactions.
 */
export function buildCreatePoolInstructions(request: CreatePoolRequest): CreatePoolPlan {
  const { deployment, payer } = request;
  if (request.mint.equals(NATIVE_MINT)) throw new Error('the launched mint cannot be the quote mint');
  const payerWsol = getAssociatedTokenAddressSync(NATIVE_MINT, payer, false, TOKEN_PROGRAM_ID);
  const launched: PoolSide = { mint: request.mint, tokenProgram: request.mintTokenProgram, creatorToken: request.payerToken, amount: request.tokenAmount };
  const quote: PoolSide = { mint: NATIVE_MINT, tokenProgram: TOKEN_PROGRAM_ID, creatorToken: payerWsol, amount: request.quoteLamports };
  const { token0, token1, swapped } = orderMints(request.mint, NATIVE_MINT);
  const [side0, side1] = swapped ? [quote, launched] : [launched, quote];
  const addresses = poolAddresses(deployment, payer, token0, token1);
  const lpAmount = initialLpAmount(side0.amount, side1.amount);
  const recipientLpToken = getAssociatedTokenAddressSync(addresses.lpMint, request.lpRecipient, true, TOKEN_PROGRAM_ID);

  const instructions: TransactionInstruction[] = [
    createAssociatedTokenAccountIdempotentInstruction(payer, payerWsol, payer, NATIVE_MINT),
    SystemProgram.transfer({ fromPubkey: payer, toPubkey: payerWsol, lamports: request.quoteLamports }),
    createSyncNativeInstruction(payerWsol),
    initializeInstruction(deployment, payer, side0, side1),
  ];
  if (!request.lpRecipient.equals(payer)) {
    instructions.push(
      createAssociatedTokenAccountIdempotentInstruction(payer, recipientLpToken, request.lpRecipient, addresses.lpMint),
      createTransferCheckedInstruction(addresses.creatorLpToken, addresses.lpMint, recipientLpToken, payer, lpAmount, 9),
      createCloseAccountInstruction(addresses.creatorLpToken, payer, payer),
    );
  }
  instructions.push(createCloseAccountInstruction(payerWsol, payer, payer));
  return { instructions, addresses: { ...addresses, token0, token1, payerWsol, recipientLpToken }, lpAmount };
}
