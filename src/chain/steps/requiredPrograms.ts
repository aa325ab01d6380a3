import { DEFAULT_PROGRAM_IDS, type ProgramIds } from '../programs/programIds.js';
import type { LaunchPlan, RequiredProgram } from './types.js';

const HOW_TO_PROVIDE = (id: string) =>
  `deploy it on the cluster, or for the embedded chain run \`solana program dump -u m ${id} ${id}.so\` into CHAIN_PROGRAMS_DIR and restart`;

/**
 * Programs beyond the embedded defaults (System, SPL Token, Token-2022, Associated Token, Memo)
 * that `plan` needs. The API refuses the launch with `chain_capability_missing` when one is not
 * executable on the configured chain; `reason` says why it is needed and how to provide it.
 */
export function requiredPrograms(plan: LaunchPlan, ids: ProgramIds = DEFAULT_PROGRAM_IDS): RequiredProgram[] {
  const out: RequiredProgram[] = [];
  const add = (name: string, programId: string, why: string) =>
    out.push({ name, programId, reason: `${why}; ${HOW_TO_PROVIDE(programId)}` });
  if (plan.tokenStandard === 'spl-token') add('Metaplex Token Metadata', ids.tokenMetadata, 'spl-token launches store name, symbol and uri in a Metaplex metadata account');
  if (plan.vesting !== undefined || plan.allocations.vesting > 0) add('Jupiter Lock', ids.vesting, 'the vesting allocation is locked in a Jupiter Lock escrow');
  if (plan.dao !== undefined) add('SPL Governance', ids.governance, 'the DAO is an SPL Governance realm');
  if (plan.pool !== undefined || plan.allocations.pool > 0) add('Raydium CPMM', ids.pool, 'the pool allocation seeds a Raydium CPMM pool');
  return out;
}
