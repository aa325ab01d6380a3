import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVICE_NODE_FLAGS } from '../../scripts/serviceNodeFlags.js';

const root = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

describe("the service process's V8 flags (scripts/serviceNodeFlags.ts)", () => {
  it('are the ones npm start, the Docker image and the README fly.toml run it with', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    const fly = /^\s*app = "(node [^"]*)"/m.exec(read('README.md'))?.[1];
    expect(SERVICE_NODE_FLAGS.length).toBeGreaterThan(0);
    for (const flag of SERVICE_NODE_FLAGS) {
      expect(start?.split(' ')).toContain(flag);
      expect(JSON.parse(cmd ?? '[]')).toContain(flag);
      expect(fly?.split(' ')).toContain(flag);
    }
  });

  it('are accepted by this node and reach the process', () => {
    const argv = execFileSync(process.execPath, [...SERVICE_NODE_FLAGS, '-e', 'process.stdout.write(JSON.stringify(process.execArgv))'], { encoding: 'utf8' });
    expect(JSON.parse(argv)).toEqual(expect.arrayContaining([...SERVICE_NODE_FLAGS]));
  });
});
