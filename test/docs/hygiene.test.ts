import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function files(dir: string, pattern: RegExp): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...files(path, pattern));
    else if (pattern.test(entry.name)) out.push(path);
  }
  return out;
}

/** Lines of `paths` matching `pattern`, as "path:line: text". */
function offending(paths: string[], pattern: RegExp): string[] {
  return paths.flatMap((path) =>
    readFileSync(join(root, path), 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${relative(root, join(root, path))}:${i + 1}: ${line.trim()}`] : [])),
  );
}

describe('docs describe the service as it is; comments point at docs/', () => {
  const docs = ['README.md', ...files('docs', /\.md$/)];

  it('no document speaks of issue numbers, work periods or later waves', () => {
    const ordinal = '(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|\\d+th)';
    const history = new RegExp(`\\bissue #\\d+|\\b${ordinal} (wave-\\d )?session\\b|\\bwave[- ]\\d\\b|later waves`, 'i');
    expect(offending(docs, history)).toEqual([]);
  });

  it('docs/benchmarks.md is a current-state page of at most ~200 lines', () => {
    expect(readFileSync(join(root, 'docs/benchmarks.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(200);
  });

  it('no source, script or test cites the product contract by section instead of a docs/ file', () => {
    const code = [...files('src', /\.tsx?$/), ...files('scripts', /\.(ts|mjs)$/), ...files('test', /\.ts$/)];
    expect(offending(code, new RegExp(['SPEC', '§'].join(' ') + '|SPEC\\.md'))).toEqual([]);
  });
});
