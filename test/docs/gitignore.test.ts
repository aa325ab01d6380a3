import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * What the README's commands make in the checkout is ignored by git, so a newcomer who follows it
 * never commits a keypair file, a database backup or a program binary by `git add -A`. The paths are
 * read from the README's own commands (a new one joins the test by itself); git's own matcher decides.
 */
const root = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const inCheckout = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: root, encoding: 'utf8' }).stdout?.trim() === 'true';

/** Files and folders the README's commands create, relative to the checkout. */
function madeByReadme(text: string): string[] {
  const made = new Set<string>(['data/launch-service.sqlite']); // DATA_DIR's default, ./data
  const patterns: Array<[RegExp, (path: string) => string]> = [
    [/^\s*cat > (\S+) <</gm, (p) => p],
    [/holder -- keygen ([\w./-]+)/g, (p) => p],
    [/mkdir -p (\S+)/g, (p) => `${p}/program.so`],
    [/npm run backup -- ((?:[^\s$]|\$\([^)]*\))+)/g, (p) => p.replace(/\$\([^)]*\)/g, '2026-01-31')],
    [/pg_dump [^`\n]*-f (\S+?)`/g, (p) => p],
  ];
  for (const [pattern, path] of patterns) for (const match of text.matchAll(pattern)) made.add(path(match[1]!).replace(/^\.\//, ''));
  // Placeholders (`<file>`) and absolute paths are the reader's own choice, not the checkout's.
  return [...made].filter((p) => !p.includes('<') && !p.startsWith('/'));
}

describe('.gitignore', () => {
  it.runIf(inCheckout)('ignores every file the README tells a newcomer to make in the checkout', () => {
    const paths = madeByReadme(readme);
    // The reading found what the README makes today, so the test cannot pass by reading nothing.
    expect(paths).toEqual(expect.arrayContaining(['launch.json', 'curve.json', 'trader.json', 'creator.json', 'beneficiary.json', 'programs/program.so', 'backups/launch-service-2026-01-31.sqlite', 'launch-service.dump']));
    const checked = spawnSync('git', ['check-ignore', '--no-index', '--stdin'], { cwd: root, input: paths.join('\n'), encoding: 'utf8' });
    const ignored = checked.stdout.split('\n').filter(Boolean);
    expect(paths.filter((p) => !ignored.includes(p))).toEqual([]);
  });
});
