import { DEFAULT_PROGRAM_IDS, PROGRAM_NAMES, type ProgramIds } from '../programs/programIds.js';
import { curvePoolOf, type LaunchPlan, type RequiredProgram } from './types.js';

const HOW_TO_PROVIDE = (id: string) =>
  `deploy it on the cluster; on the embedded chain put ${id}.so in CHAIN_PROGRAMS_DIR (\`solana program dump -u m ${id} ${id}.so\`) and restart, or set CHAIN_CLONE_FROM to a cluster that has it`;

/**
 * Programs beyond the embedded defaults (System, SPL Token, Token-2022, Associated Token, Memo)
 * that `plan` needs. The API refuses the launch with `chain_capability_missing` when one is not
 * executable on the configured chain; `reason` says why it is needed and how to provide it.
 */
export function requiredPrograms(plan: LaunchPlan, ids: ProgramIds = DEFAULT_PROGRAM_IDS): RequiredProgram[] {
  const out: RequiredProgram[] = [];
  const add = (name: string, programId: string, why: string) =>
    out.push({ name, programId, reason: `${why}; ${HOW_TO_PROVIDE(programId)}` });
  if (plan.tokenStandard === 'spl-token') add(PROGRAM_NAMES.tokenMetadata, ids.tokenMetadata, 'spl-token launches store name, symbol and uri in a Metaplex metadata account');
  if (plan.vesting !== undefined || plan.allocations.vesting > 0) add(PROGRAM_NAMES.vesting, ids.vesting, 'the vesting allocation is locked in a Jupiter Lock escrow');
  if (plan.dao !== undefined) add(PROGRAM_NAMES.governance, ids.governance, 'the DAO is an SPL Governance realm');
  if (curvePoolOf(plan)) {
    add(PROGRAM_NAMES.curve, ids.curve, 'pool.kind "bonding-curve" launches on a Meteora Dynamic Bonding Curve');
    add(PROGRAM_NAMES.amm, ids.amm, 'a bonding curve graduates to a Meteora DAMM v2 pool');
    return out;
  }
  if (plan.pool !== undefined || plan.allocations.pool > 0) add(PROGRAM_NAMES.pool, ids.pool, 'the pool allocation seeds a Raydium CPMM pool');
  return out;
}
