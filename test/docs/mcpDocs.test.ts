import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApi } from '../../src/http/openapi.js';
import { TOOLS } from '../../src/mcp/tools.js';

const root = join(import.meta.dirname, '..', '..');
const page = readFileSync(join(root, 'docs', 'mcp.md'), 'utf8');

describe('docs/mcp.md and the OpenAPI document tell a client how to call /mcp', () => {
  it("lists every tool with each of its argument names, the required ones in bold", () => {
    for (const tool of TOOLS) {
      const row = page.split('\n').find((line) => line.startsWith(`| \`${tool.name}\` |`));
      expect(row, tool.name).toBeDefined();
      const args = row!.split('|')[2]!;
      for (const [name, schema] of Object.entries(tool.inputSchema)) {
        expect(args, `${tool.name}: ${name}`).toContain(z.safeParse(schema, undefined).success ? `\`${name}\`` : `**\`${name}\`**`);
      }
      if (Object.keys(tool.inputSchema).length === 0) expect(args.trim()).toBe('none');
    }
  });

  it('shows a curl call with the Accept header the transport requires (the curl itself runs in test/process/readmeWalk.test.ts)', () => {
    expect(page).toMatch(/<!-- walk -->\n```sh\ncurl -s localhost:8080\/mcp [^`]*-H 'Accept: application\/json, text\/event-stream'/);
  });

  it('OpenAPI describes POST /mcp: the Accept header, the tools, the 406', () => {
    const doc = buildOpenApi('1.2.3') as { paths: Record<string, Record<string, { description?: string; responses: Record<string, unknown> }>> };
    const mcp = doc.paths['/mcp']?.post;
    expect(mcp).toBeDefined();
    expect(mcp!.description).toContain('Accept: application/json, text/event-stream');
    for (const tool of TOOLS) expect(mcp!.description).toContain(tool.name);
    expect(Object.keys(mcp!.responses)).toContain('406');
  });
});
