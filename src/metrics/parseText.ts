/** One sample of the Prometheus text format: `name{label="value",...} 12.5`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const unescape = (v: string) => v.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));

/** Parses the samples of a text exposition (comments skipped); throws on a line that is not one. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line.slice(0, 200)}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key as string] = unescape(value ?? '');
    const value = match[3] === '+Inf' ? Infinity : match[3] === '-Inf' ? -Infinity : Number(match[3]);
    samples.push({ name: match[1] as string, labels, value });
  }
  return samples;
}

/** Sum of the samples named `name` whose labels include `where`. */
export function sumSamples(samples: Sample[], name: string, where: (labels: Record<string, string>) => boolean = () => true): number {
  return samples.filter((s) => s.name === name && where(s.labels)).reduce((total, s) => total + s.value, 0);
}
