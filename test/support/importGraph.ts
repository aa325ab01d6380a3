import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Relative imports of every `.ts` file under `root`, as paths relative to `root` (`.js` → `.ts`). */
export function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) graph.set(relative(root, path), importsOf(root, path));
    }
  };
  walk(root);
  return graph;
}

function importsOf(root: string, file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const targets: string[] = [];
  // `import … from './x.js'`, `export … from './x.js'`, `import('./x.js')`; type-only imports count too.
  for (const match of source.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts'));
    targets.push(relative(root, target));
  }
  return targets;
}

/** Every import cycle, each as the list of files around it (empty when the graph is acyclic). */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}
