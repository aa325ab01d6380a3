// Bundles the service (src/app/main.ts and everything it imports from src/) into dist/app/main.mjs,
// and the chain thread's entry (src/app/chainThread.ts) into dist/app/chainThread.mjs beside it,
// with esbuild, packages left as imports of node_modules. `npm start` runs it (scripts/start.mjs):
// loading one file costs about half of what loading ~200 TypeScript files through tsx's resolve
// and transform hooks does, so a restarted process opens its port sooner (docs/benchmarks.md).
// dist/app/ keeps the source's depth: src/config reads ../../package.json relative to itself.
import { buildSync } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const serviceBundle = join(root, 'dist', 'app', 'main.mjs');

export function buildService() {
  const { outputFiles } = buildSync({
    absWorkingDir: root,
    entryPoints: ['src/app/main.ts', 'src/app/chainThread.ts'],
    outdir: dirname(serviceBundle),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    keepNames: true,
    logLevel: 'warning',
    write: false,
  });
  // Several instances may start at once from one checkout (README "Running several instances"):
  // an unchanged file is left alone, a changed one replaced whole (rename), never half-written
  // under a process loading it. The map goes first, so the bundle never points at a stale one.
  mkdirSync(dirname(serviceBundle), { recursive: true });
  for (const file of [...outputFiles].sort((a, b) => Number(b.path.endsWith('.map')) - Number(a.path.endsWith('.map')))) {
    if (existsSync(file.path) && readFileSync(file.path).equals(file.contents)) continue;
    const partial = `${file.path}.${process.pid}.tmp`;
    writeFileSync(partial, file.contents);
    renameSync(partial, file.path);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildService();
