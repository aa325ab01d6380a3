import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENT_DATA_SCHEMAS } from '../../src/webhooks/eventSchemas.js';
import { WEBHOOK_EVENT_KINDS } from '../../src/webhooks/sampleEvents.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** Every `event: 'group.kind'` literal in src/: the kinds the code can record. */
function kindsInSource(): Set<string> {
  const kinds = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name)) for (const m of readFileSync(path, 'utf8').matchAll(/\bevent: '([a-z]+\.[a-z_]+)'/g)) kinds.add(m[1]!);
    }
  };
  walk(join(root, 'src'));
  return kinds;
}

/** The rows of docs/events.md's kind tables: kind → its `data` cell. */
function documentedRows(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of read('docs/events.md').split('\n')) {
    const cells = /^\| `([a-z]+\.[a-z_]+)` \|(.*)$/.exec(line);
    if (cells) rows.set(cells[1]!, cells[2]!.split(' | ').at(-1) ?? '');
  }
  return rows;
}

describe('docs/events.md and docs/webhooks.md list every event kind the service sends', () => {
  const schemaKinds = Object.keys(EVENT_DATA_SCHEMAS).sort();

  it('every kind recorded in src/ has a schema, and the test route samples every kind', () => {
    const recorded = [...kindsInSource()];
    expect(recorded.length).toBeGreaterThanOrEqual(15);
    for (const kind of recorded) expect(schemaKinds, `${kind} is recorded in src/ but has no schema`).toContain(kind);
    expect([...WEBHOOK_EVENT_KINDS].sort()).toEqual(schemaKinds);
  });

  it('docs/events.md has one row per kind, naming every data field of its schema', () => {
    const rows = documentedRows();
    expect([...rows.keys()].sort()).toEqual(schemaKinds);
    for (const kind of schemaKinds) {
      const shape = (EVENT_DATA_SCHEMAS[kind as keyof typeof EVENT_DATA_SCHEMAS] as unknown as { shape: Record<string, unknown> }).shape;
      for (const field of Object.keys(shape)) expect(rows.get(kind), `docs/events.md: ${kind} does not name \`${field}\``).toMatch(new RegExp(`\`${field}\\b`));
    }
  });

  it('docs/webhooks.md names every kind', () => {
    const guide = read('docs/webhooks.md');
    for (const kind of schemaKinds) expect(guide, `docs/webhooks.md does not name ${kind}`).toContain(`\`${kind}\``);
  });
});
