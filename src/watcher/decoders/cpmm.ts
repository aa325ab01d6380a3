import { instructionDiscriminator } from '../../chain/programs/anchor.js';
import type { HistoryTransaction } from '../../chain/history.js';
import { allInstructions } from './instructions.js';

/**
 * Fee collections on a Raydium CPMM pool. The program has three: `collect_protocol_fee` and
 * `collect_fund_fee` (signed by the AmmConfig's protocol/fund owner, i.e. Raydium's admin) and, in
 * builds since 2025, `collect_creator_fee` (signed by the pool creator, only for pools created
 * with a creator fee). The pools this service creates use plain `initialize`, which sets no
 * creator fee, so on them only the admin collections can occur; LPs earn fees by withdrawing
 * liquidity, which is no fee collection. Accounts: `[owner|creator, authority, pool_state,
 * amm_config, token_0_vault, token_1_vault, vault_0_mint, vault_1_mint, recipient_0, recipient_1, …]`.
 */
const KINDS = [
  { kind: 'creator', discriminator: instructionDiscriminator('collect_creator_fee') },
  { kind: 'protocol', discriminator: instructionDiscriminator('collect_protocol_fee') },
  { kind: 'fund', discriminator: instructionDiscriminator('collect_fund_fee') },
] as const;

export interface FeeCollection {
  instructionIndex: number;
  kind: 'creator' | 'protocol' | 'fund';
  pool: string;
  claimer: string;
  /** Raw amounts received per mint (decimal strings). */
  amounts: Record<string, string>;
}

const startsWith = (data: Uint8Array, prefix: Uint8Array) => data.length >= prefix.length && prefix.every((b, i) => data[i] === b);

function received(tx: HistoryTransaction, account: string): bigint {
  const index = tx.accountKeys.indexOf(account);
  const amount = (list: HistoryTransaction['preTokenBalances']) => BigInt(list.find((b) => b.accountIndex === index)?.amount ?? '0');
  return amount(tx.postTokenBalances) - amount(tx.preTokenBalances);
}

/** The fee collections a successful transaction makes on `pool`, top-level or inner (keys: {@link allInstructions}). */
export function decodeFeeCollections(tx: HistoryTransaction, programId: string, pool: string): FeeCollection[] {
  const found: FeeCollection[] = [];
  allInstructions(tx).forEach(({ ix, key: instructionIndex }) => {
    if (ix.programId !== programId || ix.accounts[2] !== pool) return;
    const match = KINDS.find((k) => startsWith(ix.data, k.discriminator));
    if (!match) return;
    const [claimer, , , , , , mint0, mint1, recipient0, recipient1] = ix.accounts;
    if (!claimer || !mint0 || !mint1 || !recipient0 || !recipient1) return;
    found.push({
      instructionIndex,
      kind: match.kind,
      pool,
      claimer,
      amounts: { [mint0]: received(tx, recipient0).toString(), [mint1]: received(tx, recipient1).toString() },
    });
  });
  return found;
}
