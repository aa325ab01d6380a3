import type { StepOutcome } from '../chain/steps/types.js';

/** The events a completed step emits: `launch.step_complete`, plus `vesting.created` / `dao.created`. */
export function stepEvents(step: string, index: number, total: number, output: StepOutcome): Array<{ event: string; data: unknown }> {
  const events: Array<{ event: string; data: unknown }> = [
    { event: 'launch.step_complete', data: { step, index: index + 1, total, transactions: output.transactions, result: output.result } },
  ];
  if (step === 'create_vesting') events.push({ event: 'vesting.created', data: output.result });
  if (step === 'create_dao') events.push({ event: 'dao.created', data: output.result });
  return events;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const obj = (v: unknown): Record<string, unknown> | null => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : null);

/** `launch.complete` data exactly as docs/events.md: every address and every transaction with its type. */
export function completionData(results: Record<string, unknown>, transactions: StepOutcome['transactions']): Record<string, unknown> {
  const dao = obj(results.dao);
  const pool = obj(results.pool);
  const vesting = obj(results.vesting);
  return {
    mint: str(results.mint),
    metadata: str(results.metadata),
    vestingContract: str(results.vestingContract) ?? str(vesting?.escrow) ?? null,
    dao: dao ? { realm: str(dao.realm), treasury: str(dao.treasury) } : null,
    pool: pool ? { address: str(pool.address), lpMint: str(pool.lpMint) } : null,
    transactions,
  };
}
