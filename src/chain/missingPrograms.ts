/** A program the launch steps call: its id and the name one-line messages use. */
export interface NamedProgram {
  programId: string;
  name: string;
}

/** Why the embedded chain could not fetch programs (CHAIN_CLONE_FROM): the source and the cause in a few words. */
export interface FetchFailure {
  sourceUrl: string;
  cause: string;
}

/**
 * The one line an operator reads when the embedded chain lacks programs: which, why they were not
 * fetched, and the two ways to provide them. The start's log line and a refused launch's `422
 * chain_capability_missing` message are this same line (README "The full launch").
 */
export function missingProgramsLine(programs: NamedProgram[], failure?: FetchFailure): string {
  const names = programs.map((p) => `${p.name} (${p.programId})`).join(', ');
  const them = programs.length === 1 ? 'it' : 'them';
  const fetched = failure ? ` and could not fetch ${them} from ${failure.sourceUrl} (${failure.cause})` : '';
  return `the embedded chain lacks ${names}${fetched}; provide ${them} with CHAIN_PROGRAMS_DIR (a directory of <programId>.so files) or CHAIN_CLONE_FROM (a reachable cluster to fetch ${them} from)`;
}

/** The same for a cluster reached through SOLANA_RPC_URL, where neither variable helps. */
export function clusterLacksLine(programs: NamedProgram[]): string {
  const names = programs.map((p) => `${p.name} (${p.programId})`).join(', ');
  return `the cluster of SOLANA_RPC_URL lacks ${names}; point SOLANA_RPC_URL at a cluster that has ${programs.length === 1 ? 'it' : 'them'}`;
}
