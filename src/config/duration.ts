/** Parses `500ms`, `30s`, `2m`, `1h`, `365d` or plain milliseconds into milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]);
  const unit = match[2] ?? 'ms';
  const factor = unit === 'd' ? 86_400_000 : unit === 'h' ? 3_600_000 : unit === 'm' ? 60_000 : unit === 's' ? 1000 : 1;
  const ms = Math.round(value * factor);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** Parses a comma-separated list of durations (`0,30s,2m,10m,1h`); undefined when any entry is malformed. */
export function parseDurationList(text: string): number[] | undefined {
  const parts = text.split(',').map((part) => parseDuration(part));
  if (parts.length === 0 || parts.some((p) => p === undefined)) return undefined;
  return parts as number[];
}
