import {
  ASSOCIATED_TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createSyncNativeInstruction,
  getAssociatedTokenAddressSync,
  NATIVE_MINT,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { SystemProgram, Transaction, type Connection, type Keypair, type PublicKey } from '@solana/web3.js';
import BN from 'bn.js';
import { createDammV2Program, deriveDammV2EventAuthority, deriveDammV2PoolAuthority } from '@meteora-ag/dynamic-bonding-curve-sdk';
import type { ChainBackend } from '../../../src/chain/backend.js';

/**
 * An outside trader on a graduated curve's DAMM v2 pool, through the DAMM v2 Anchor client Meteora
 * ships in its DBC SDK (`createDammV2Program`), not our code. (`@meteora-ag/cp-amm-sdk` is not a
 * dependency: docs/programs.md says why.)
 */
export function dammTrader(chain: Pick<ChainBackend, 'getAccountInfo' | 'getLatestBlockhash' | 'sendRawTransaction' | 'confirmTransaction'>) {
  const program = createDammV2Program({ rpcEndpoint: 'embedded' } as unknown as Connection);
  const poolOf = async (pool: PublicKey) => program.coder.accounts.decode('pool', (await chain.getAccountInfo(pool))!.data) as Record<string, any>;
  const send = async (tx: Transaction, signer: Keypair) => {
    const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
    tx.recentBlockhash = blockhash;
    tx.feePayer = signer.publicKey;
    tx.sign(signer);
    const signature = await chain.sendRawTransaction(tx.serialize());
    await chain.confirmTransaction(signature, lastValidBlockHeight);
    return signature;
  };
  /** Swaps `amountIn` of SOL for the token (`buy`) or of the token for SOL (`sell`). */
  const swap = async (trader: Keypair, pool: PublicKey, side: 'buy' | 'sell', amountIn: bigint) => {
    const p = await poolOf(pool);
    const programA = Number(p.tokenAFlag) === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID;
    const programB = Number(p.tokenBFlag) === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID;
    const accountA = getAssociatedTokenAddressSync(p.tokenAMint, trader.publicKey, false, programA);
    const accountB = getAssociatedTokenAddressSync(p.tokenBMint, trader.publicKey, false, programB);
    const tx = new Transaction().add(
      createAssociatedTokenAccountIdempotentInstruction(trader.publicKey, accountA, trader.publicKey, p.tokenAMint, programA, ASSOCIATED_TOKEN_PROGRAM_ID),
      createAssociatedTokenAccountIdempotentInstruction(trader.publicKey, accountB, trader.publicKey, p.tokenBMint, programB, ASSOCIATED_TOKEN_PROGRAM_ID),
    );
    if (side === 'buy' && p.tokenBMint.equals(NATIVE_MINT)) tx.add(SystemProgram.transfer({ fromPubkey: trader.publicKey, toPubkey: accountB, lamports: amountIn }), createSyncNativeInstruction(accountB));
    const [input, output] = side === 'buy' ? [accountB, accountA] : [accountA, accountB];
    tx.add(
      await program.methods
        .swap({ amountIn: new BN(amountIn.toString()), minimumAmountOut: new BN(0) })
        .accountsPartial({
          poolAuthority: deriveDammV2PoolAuthority(),
          pool,
          inputTokenAccount: input,
          outputTokenAccount: output,
          tokenAVault: p.tokenAVault,
          tokenBVault: p.tokenBVault,
          tokenAMint: p.tokenAMint,
          tokenBMint: p.tokenBMint,
          payer: trader.publicKey,
          tokenAProgram: programA,
          tokenBProgram: programB,
          referralTokenAccount: null,
          eventAuthority: deriveDammV2EventAuthority(),
        })
        .instruction(),
    );
    return send(tx, trader);
  };
  /** The trader's token balance of the pool's launched token (base units). */
  const tokenBalance = async (trader: PublicKey, pool: PublicKey) => {
    const p = await poolOf(pool);
    const account = getAssociatedTokenAddressSync(p.tokenAMint, trader, false, Number(p.tokenAFlag) === 0 ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID);
    const info = await chain.getAccountInfo(account);
    return info ? info.data.readBigUInt64LE(64) : 0n;
  };
  return { program, poolOf, swap, tokenBalance };
}
