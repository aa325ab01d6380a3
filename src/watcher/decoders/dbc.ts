import { instructionDiscriminator } from '../../chain/programs/anchor.js';
import type { HistoryTransaction } from '../../chain/history.js';
import { allInstructions } from './instructions.js';

/**
 * Fee claims on a Meteora DBC curve (docs/watcher.md): `claim_creator_trading_fee` (and its `2`),
 * signed by the pool's creator, accounts `[pool_authority, pool, token_a_account, token_b_account,
 * base_vault, quote_vault, base_mint, quote_mint, creator, …]`, and `claim_trading_fee` (and its
 * `2`), signed by the config's fee claimer (the partner), the same with `config` second. What each
 * paid is what left the curve's vaults in the transaction (its token balances): the claimer's
 * wrapped-SOL account may be closed in the same transaction. A transaction with several claims on
 * the curve reports their sum on the first.
 */
const KINDS = [
  { share: 'creator', offset: 0, discriminator: instructionDiscriminator('claim_creator_trading_fee') },
  { share: 'creator', offset: 0, discriminator: instructionDiscriminator('claim_creator_trading_fee2') },
  { share: 'partner', offset: 1, discriminator: instructionDiscriminator('claim_trading_fee') },
  { share: 'partner', offset: 1, discriminator: instructionDiscriminator('claim_trading_fee2') },
] as const;

export interface CurveFeeClaim {
  instructionIndex: number;
  /** The curve's creator fee, or the partner's (the config's fee claimer). */
  share: 'creator' | 'partner';
  claimer: string;
  /** Raw amounts paid per mint (decimal strings, those above 0). */
  amounts: Record<string, string>;
}

const startsWith = (data: Uint8Array, prefix: Uint8Array) => data.length >= prefix.length && prefix.every((b, i) => data[i] === b);

function paidOut(tx: HistoryTransaction, vault: string): bigint {
  const index = tx.accountKeys.indexOf(vault);
  const amount = (list: HistoryTransaction['preTokenBalances']) => BigInt(list.find((b) => b.accountIndex === index)?.amount ?? '0');
  return index < 0 ? 0n : amount(tx.preTokenBalances) - amount(tx.postTokenBalances);
}

/** The fee claims a successful transaction makes on `pool`, top-level or inner. */
export function decodeCurveFeeClaims(tx: HistoryTransaction, programId: string, pool: string): CurveFeeClaim[] {
  if (tx.err) return [];
  const found: CurveFeeClaim[] = [];
  for (const { ix, key } of allInstructions(tx)) {
    if (ix.programId !== programId) continue;
    const match = KINDS.find((k) => startsWith(ix.data, k.discriminator));
    if (!match || ix.accounts[1 + match.offset] !== pool) continue;
    const [baseVault, quoteVault, baseMint, quoteMint, claimer] = ix.accounts.slice(4 + match.offset, 9 + match.offset);
    if (!baseVault || !quoteVault || !baseMint || !quoteMint || !claimer) continue;
    const amounts: Record<string, string> = {};
    if (found.length === 0) {
      for (const [mint, vault] of [[baseMint, baseVault], [quoteMint, quoteVault]] as const) {
        const paid = paidOut(tx, vault);
        if (paid > 0n) amounts[mint] = paid.toString();
      }
    }
    found.push({ instructionIndex: key, share: match.share, claimer, amounts });
  }
  return found;
}
