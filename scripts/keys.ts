/**
 * API key administration: `npm run keys -- create --owner acme --scopes launches:write,launches:read [--name ci]`,
 * `npm run keys -- list`, `npm run keys -- revoke <id>`. The key is printed once, on a line of its own.
 * `npm run keys -- limits --owner acme [--max-sol-per-launch 2.5] [--max-sol-per-day none] …` sets an
 * owner's funding limits (docs/funding.md) and prints them all.
 * `npm run keys -- bounds --owner acme [--endpoints 25] [--launches-in-flight default] [--redeliveries N]`
 * sets or clears an owner's overrides of the owner bounds (docs/api.md, "Bounds") and prints the bounds.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.js';
import { openConfiguredDatabase, migrateToLatest } from '../src/db/database.js';
import { createApiKey, listApiKeys, revokeApiKey, unknownScopes } from '../src/auth/apiKeys.js';
import type { Scope } from '../src/auth/scopes.js';
import { createSecretBox } from '../src/crypto/secretBox.js';
import { effectiveBounds, readBoundOverrides, writeBoundOverrides, type BoundOverrides, type OwnerBound } from '../src/bounds/ownerBounds.js';
import { OWNER_LIMIT_CEILINGS } from '../src/config/config.js';
import { limitsOf, readLimits, writeLimits, type FundingLimits } from '../src/funding/limits.js';
import { formatSol, parseSol } from '../src/funding/sol.js';
import { ensureWallet, findWallet, ownerKnown } from '../src/funding/wallets.js';

const USAGE =
  'usage: npm run keys -- create --owner <name> --scopes <a,b> [--name <label>] | list | revoke <id>\n' +
  '       | limits --owner <name> [--max-sol-per-launch <SOL|none>] [--max-sol-per-day <SOL|none>] [--max-launches-per-day <n|none>] [--low-balance-sol <SOL|none>]\n' +
  '       | bounds --owner <name> [--endpoints <n|default>] [--launches-in-flight <n|default>] [--redeliveries <n|default>]';

/** The options of `bounds`, each an owner's override of one bound. */
const BOUND_OPTIONS = { endpoints: 'endpoints', 'launches-in-flight': 'launchesInFlight', redeliveries: 'redeliveries' } as const satisfies Record<string, OwnerBound>;

/** The limit options of `limits`: the SOL ones in SOL (stored as lamports), launches as a count. */
const LIMIT_OPTIONS = {
  'max-sol-per-launch': { field: 'maxLamportsPerLaunch', sol: true },
  'max-sol-per-day': { field: 'maxLamportsPerDay', sol: true },
  'max-launches-per-day': { field: 'maxLaunchesPerDay', sol: false },
  'low-balance-sol': { field: 'lowBalanceLamports', sol: true },
} as const satisfies Record<string, { field: keyof FundingLimits; sol: boolean }>;
const FUNDING_OWNER = /^[A-Za-z0-9._:@-]{1,100}$/;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      owner: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      'max-sol-per-launch': { type: 'string' },
      'max-sol-per-day': { type: 'string' },
      'max-launches-per-day': { type: 'string' },
      'low-balance-sol': { type: 'string' },
      endpoints: { type: 'string' },
      'launches-in-flight': { type: 'string' },
      redeliveries: { type: 'string' },
    },
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
    if (command === 'limits') {
      const owner = values.owner?.trim();
      if (!owner || !FUNDING_OWNER.test(owner)) return fail('--owner is required: 1 to 100 letters, digits or . _ : @ -');
      const limits: Partial<FundingLimits> = {};
      for (const [option, { field, sol }] of Object.entries(LIMIT_OPTIONS)) {
        const raw = values[option as keyof typeof LIMIT_OPTIONS]?.trim();
        if (raw === undefined) continue;
        if (raw === 'none') limits[field] = null;
        else if (sol) {
          const lamports = parseSol(raw);
          if (lamports === undefined) return fail(`--${option} must be an amount of SOL such as 2 or 0.5 (at most 9 decimal places), or none to clear it (got "${raw}")`);
          limits[field] = lamports;
        } else {
          if (!/^\d{1,7}$/.test(raw) || Number(raw) > 1_000_000) return fail(`--${option} must be a whole number from 0 to 1000000, or none to clear it (got "${raw}")`);
          limits[field] = Number(raw);
        }
      }
      let address: string;
      let current: FundingLimits;
      if (Object.keys(limits).length === 0) {
        // Nothing to set: show what is set, without making a wallet.
        const wallet = await findWallet(db, owner);
        if (!wallet) return fail(`${owner} has no funding wallet yet (it is made on the owner's first use, or by setting a limit)`);
        address = wallet.address;
        current = (await readLimits(db, owner)) ?? limitsOf(wallet);
      } else {
        if (!(await ownerKnown(db, owner))) return fail(`No owner "${owner}": it has no API key and no funding wallet; create its key first (nothing was created)`);
        // The wallet is made here if the owner has none yet (not airdropped: that is the service's, on first use).
        const { wallet, created } = await ensureWallet(db, createSecretBox(config.secretKey), owner, Date.now());
        if (created) process.stderr.write(`Made the funding wallet ${wallet.address} for "${owner}"; deposit to it before its first launch.\n`);
        address = wallet.address;
        current = await writeLimits(db, owner, limits, Date.now());
      }
      const sol = (v: bigint | null) => (v === null ? 'none' : formatSol(v));
      process.stdout.write(
        `owner\t${owner}\naddress\t${address}\n` +
          `max-sol-per-launch\t${sol(current.maxLamportsPerLaunch)}\n` +
          `max-sol-per-day\t${sol(current.maxLamportsPerDay)}\n` +
          `max-launches-per-day\t${current.maxLaunchesPerDay ?? 'none'}\n` +
          `low-balance-sol\t${sol(current.lowBalanceLamports)}\n`,
      );
      return 0;
    }
    if (command === 'bounds') {
      const owner = values.owner?.trim();
      if (!owner || !FUNDING_OWNER.test(owner)) return fail('--owner is required: 1 to 100 letters, digits or . _ : @ -');
      const patch: Partial<BoundOverrides> = {};
      for (const [option, bound] of Object.entries(BOUND_OPTIONS)) {
        const raw = values[option as keyof typeof BOUND_OPTIONS]?.trim();
        if (raw === undefined) continue;
        const ceiling = OWNER_LIMIT_CEILINGS[bound];
        if (raw === 'default') patch[bound] = null;
        else if (/^\d{1,7}$/.test(raw) && Number(raw) <= ceiling) patch[bound] = Number(raw);
        else return fail(`--${option} must be a whole number from 0 to ${ceiling}, or default to clear it (got "${raw}")`);
      }
      const overrides = Object.keys(patch).length === 0 ? await readBoundOverrides(db, owner) : await writeBoundOverrides(db, owner, patch, Date.now());
      const bounds = effectiveBounds(config.ownerLimits, overrides);
      const line = (option: string, bound: OwnerBound) => `${option}\t${bounds[bound]}${overrides[bound] === null ? ' (default)' : ''}\n`;
      process.stdout.write(`owner\t${owner}\n` + Object.entries(BOUND_OPTIONS).map(([option, bound]) => line(option, bound)).join(''));
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
