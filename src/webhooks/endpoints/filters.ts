import { EVENT_DATA_SCHEMAS } from '../eventSchemas.js';

/** Every event kind an endpoint can subscribe to (docs/events.md, docs/watcher.md): the documented ones. */
export const SUBSCRIBABLE_KINDS: readonly string[] = Object.keys(EVENT_DATA_SCHEMAS);

const GROUPS = new Set(SUBSCRIBABLE_KINDS.map((k) => k.split('.')[0]));

/** Why a filter entry is refused, or undefined when it is `*`, a known kind or a `group.*` prefix. */
export function filterEntryProblem(entry: string): string | undefined {
  if (entry === '*' || SUBSCRIBABLE_KINDS.includes(entry)) return undefined;
  const prefix = /^([a-z]+)\.\*$/.exec(entry)?.[1];
  if (prefix !== undefined && GROUPS.has(prefix)) return undefined;
  return `must be "*", an event kind (${SUBSCRIBABLE_KINDS.join(', ')}) or a prefix such as "launch.*"`;
}

/** Whether an endpoint with this filter receives `event`: exact kinds and `group.*` prefixes. */
export function filterMatches(filter: readonly string[], event: string): boolean {
  return filter.some((entry) => entry === '*' || entry === event || (entry.endsWith('.*') && event.startsWith(entry.slice(0, -1))));
}
