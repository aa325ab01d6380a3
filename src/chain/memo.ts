import { PublicKey, TransactionInstruction } from '@solana/web3.js';

/** The SPL Memo program (v2/v3): on every cluster and among the embedded chain's defaults. */
export const MEMO_PROGRAM_ID = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

/**
 * A memo instruction carrying `text` (UTF-8, no signer accounts). A transaction that carries the id
 * of what it does is unique to it: two requests that would otherwise build the same transfer in
 * one blockhash window build two transactions with two signatures (docs/funding.md).
 */
export function memoInstruction(text: string): TransactionInstruction {
  return new TransactionInstruction({ programId: MEMO_PROGRAM_ID, keys: [], data: Buffer.from(text, 'utf8') });
}
