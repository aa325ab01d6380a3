import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const webhooks = join(import.meta.dirname, '..', '..', 'src', 'webhooks');

/** Every .ts file under `dir`, with its number of lines. */
function lineCounts(dir: string): Array<[string, number]> {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry): Array<[string, number]> => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return lineCounts(path);
    return entry.name.endsWith('.ts') ? [[relative(webhooks, path), readFileSync(path, 'utf8').split('\n').length - 1]] : [];
  });
}

describe('the dispatcher in small files (docs/architecture.md, "Webhook delivery")', () => {
  it('has no file in src/webhooks over 250 lines, each stage and part in a file of its own', () => {
    const over = lineCounts(webhooks).filter(([, lines]) => lines > 250);
    expect(over).toEqual([]);
  });
});
