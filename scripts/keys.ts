/**
 * API key administration: `npm run keys -- create --owner acme --scopes launches:write,launches:read [--name ci]`,
 * `npm run keys -- list`, `npm run keys -- revoke <id>`. The key is printed once, on a line of its own.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.js';
import { openConfiguredDatabase, migrateToLatest } from '../src/db/database.js';
import { createApiKey, listApiKeys, revokeApiKey, unknownScopes } from '../src/auth/apiKeys.js';
import type { Scope } from '../src/auth/scopes.js';

const USAGE = 'usage: npm run keys -- create --owner <name> --scopes <a,b> [--name <label>] | list | revoke <id>';

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { owner: { type: 'string' }, scopes: { type: 'string' }, name: { type: 'string' } },
  });
  const [command, arg] = positionals;
  const config = loadConfig();
  const { db, close } = openConfiguredDatabase(config);
  try {
    await migrateToLatest(db);
    if (command === 'create') {
      const owner = values.owner?.trim();
      const scopes = (values.scopes ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
      if (!owner || !/^[\w.@-]{1,100}$/.test(owner)) return fail('--owner is required: letters, digits, . _ @ -');
      if (scopes.length === 0) return fail('--scopes is required, e.g. launches:write,launches:read');
      const unknown = unknownScopes(scopes);
      if (unknown.length > 0) return fail(`unknown scope(s): ${unknown.join(', ')} (valid: launches:read, launches:write, admin)`);
      const created = await createApiKey(db, { owner, scopes: scopes as Scope[], name: values.name, now: Date.now() });
      process.stderr.write(`Created key ${created.id} for owner "${owner}" with scopes ${scopes.join(',')}. It is shown once:\n`);
      process.stdout.write(`${created.key}\n`);
      return 0;
    }
    if (command === 'list') {
      for (const key of await listApiKeys(db)) {
        const state = key.revoked_at ? `revoked ${new Date(key.revoked_at).toISOString()}` : 'active';
        process.stdout.write(`${key.id}\t${key.owner}\t${key.scopes}\t${key.prefix}…\t${state}\t${key.name ?? ''}\n`);
      }
      return 0;
    }
    if (command === 'revoke') {
      if (!arg) return fail('revoke needs a key id (see: npm run keys -- list)');
      if (!(await revokeApiKey(db, arg, Date.now()))) return fail(`no active key with id ${arg}`);
      process.stdout.write(`revoked ${arg}\n`);
      return 0;
    }
    return fail(USAGE);
  } finally {
    await close();
  }
}

function fail(message: string): number {
  process.stderr.write(`${message}\n`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
