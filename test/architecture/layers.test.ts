import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCycles, importGraph } from '../support/importGraph.js';

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
    const domain = ['launches/', 'webhooks/', 'deadLetters/', 'chain/', 'auth/', 'health/'];
    expect(crossings((file) => domain.some((d) => file.startsWith(d)), 'http')).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(findCycles(graph)).toEqual([]);
  });

  it('keeps chain/programs pure codecs that never import the step executors', () => {
    expect(crossings((file) => file.startsWith('chain/programs/'), 'chain/steps')).toEqual([]);
  });

  it('keeps dead letters below both launches and webhooks', () => {
    const deadLetters = (file: string) => file.startsWith('deadLetters/');
    expect([...crossings(deadLetters, 'launches'), ...crossings(deadLetters, 'webhooks')]).toEqual([]);
  });

  it('imports only sideways within a folder or down the layers of docs/architecture.md', () => {
    const layer: Record<string, number> = {
      app: 5, monitor: 5, listen: 5,
      http: 4, dashboard: 4, metrics: 4, mcp: 4,
      launches: 3, watcher: 3, fees: 3,
      webhooks: 2, funding: 2,
      chain: 1, deadLetters: 1, auth: 1, health: 1, cache: 1, retention: 1, bounds: 1,
      db: 0, config: 0, crypto: 0, lib: 0,
    };
    // The test route's samples of the watcher's events (docs/architecture.md, "Layers").
    const allowed = new Set(['webhooks/sampleEvents.ts → watcher/events.ts']);
    const folder = (file: string) => file.split('/')[0]!;
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        const [from, to] = [folder(file), folder(target)];
        if (from === to || to === '..' || allowed.has(`${file} → ${target}`)) continue;
        expect(layer[from], `${from}/ has a layer in the test and in docs/architecture.md`).toBeDefined();
        if ((layer[to] ?? Infinity) >= layer[from]!) upward.push(`${file} → ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('lets only the composition root import src/app', () => {
    expect(crossings((file) => !file.startsWith('app/'), 'app')).toEqual([]);
  });
});

describe('the import graph checker', () => {
  it('finds a cycle when there is one', () => {
    const cyclic = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
    ]);
    expect(findCycles(cyclic)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });
});
