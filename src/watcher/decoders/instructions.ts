import type { HistoryInstruction, HistoryTransaction } from '../../chain/history.js';

/**
 * Inner instructions are keyed past every top-level index: the k-th instruction that top-level
 * instruction i invoked (at any depth) has key `(i + 1) * INNER_KEY_BASE + k`. Top-level keys stay
 * their index, so the dedupe key (signature, instruction index) of a top-level event never changes.
 */
export const INNER_KEY_BASE = 1000;

/** One instruction a transaction ran, with its dedupe key. */
export interface KeyedInstruction {
  key: number;
  ix: HistoryInstruction;
  /** Invoked by another program (CPI), e.g. a multisig or a DAO executing a claim or a vote. */
  inner: boolean;
}

/** Every instruction a transaction ran, in execution order: each top-level one, then what it invoked. */
export function allInstructions(tx: HistoryTransaction): KeyedInstruction[] {
  const inner = new Map((tx.innerInstructions ?? []).map((entry) => [entry.index, entry.instructions]));
  const all: KeyedInstruction[] = [];
  tx.instructions.forEach((ix, index) => {
    all.push({ key: index, ix, inner: false });
    (inner.get(index) ?? []).forEach((invoked, k) => all.push({ key: (index + 1) * INNER_KEY_BASE + k, ix: invoked, inner: true }));
  });
  return all;
}
