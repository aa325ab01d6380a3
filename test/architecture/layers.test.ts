import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph } from '../support/importGraph.js';

const src = join(import.meta.dirname, '..', '..', 'src');
const graph = importGraph(src);

/** Imports from `from` into folder `to`, as "file → target" lines. */
function crossings(from: (file: string) => boolean, to: string): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (!from(file)) continue;
    for (const target of targets) if (target.startsWith(`${to}/`)) out.push(`${file} → ${target}`);
  }
  return out;
}

describe('the layers of src (docs/architecture.md)', () => {
  it('reads every source file', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('app/service.ts')).toContain('http/app.ts');
  });

  it('keeps domain folders free of HTTP imports', () => {
    const domain = ['launches/', 'webhooks/', 'chain/', 'auth/', 'health/'];
    expect(crossings((file) => domain.some((d) => file.startsWith(d)), 'http')).toEqual([]);
  });

  it('lets only the composition root import src/app', () => {
    expect(crossings((file) => !file.startsWith('app/'), 'app')).toEqual([]);
  });
});
