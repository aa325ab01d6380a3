import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** CHAIN_PROGRAMS_DIR as the environment gives it (never a default: CI may have no binaries). */
export const programsDir: string | undefined = process.env.CHAIN_PROGRAMS_DIR || undefined;

/** True when `<programId>.so` for every id is in CHAIN_PROGRAMS_DIR. */
export function haveBinaries(...programIds: string[]): boolean {
  const dir = programsDir;
  return dir !== undefined && programIds.every((id) => existsSync(join(dir, `${id}.so`)));
}

/** A describe-title suffix naming what a skipped suite needs. */
export function needs(...programIds: string[]): string {
  return haveBinaries(...programIds) ? '' : ` [skipped: needs CHAIN_PROGRAMS_DIR with ${programIds.map((id) => `${id}.so`).join(', ')}]`;
}
