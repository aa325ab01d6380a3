/** The deepest nesting any request body may have; real launch requests use 3. */
export const MAX_JSON_DEPTH = 32;

/**
 * The nesting depth of a JSON text, counted in one pass over its characters (outside strings),
 * without parsing it: a body of 60 000 `[` is measured, not recursed into. Stops counting once
 * `limit` is passed and returns `limit + 1`.
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x5b || ch === 0x7b) {
      depth++;
      if (depth > max) max = depth;
      if (max > limit) return limit + 1;
    } else if (ch === 0x5d || ch === 0x7d) {
      depth--;
    }
  }
  return max;
}
