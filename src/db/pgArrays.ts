/*
 * PostgreSQL array values in text form, for the hot statements (pgStatements.ts, database.ts): what
 * node-postgres does for any array, done without a regular expression or a character-by-character
 * parse for the arrays the dispatcher sends and reads on every turn (ids, numbers, short messages).
 */

/**
 * The array literal of a one-dimensional array of strings, numbers and nulls (`{"a","b\"c",NULL,5}`,
 * as node-postgres writes it), or undefined for any other array (node-postgres then writes it).
 */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'number') out += String(v);
    else if (typeof v !== 'string') return undefined;
    else if (v.indexOf('"') < 0 && v.indexOf('\\') < 0) out += `"${v}"`;
    else out += `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  }
  return `${out}}`;
}

/**
 * A text[] value as PostgreSQL returns it: split at commas when no element is quoted (PostgreSQL
 * quotes every element holding a comma, brace, quote, backslash or space, an empty one and one
 * reading NULL, so then an unquoted NULL is a null), else `fallback` (node-postgres' parser), which
 * also takes arrays with other bounds or dimensions.
 */
export function parseTextArray(value: string, fallback: (value: string) => Array<string | null>): Array<string | null> {
  if (value.charCodeAt(0) !== 123 /* { */ || value.indexOf('"') >= 0 || value.indexOf('{', 1) >= 0) return fallback(value);
  if (value === '{}') return [];
  const parts: Array<string | null> = value.slice(1, -1).split(',');
  for (let i = 0; i < parts.length; i++) if (parts[i] === 'NULL') parts[i] = null;
  return parts;
}
