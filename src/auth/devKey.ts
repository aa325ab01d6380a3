import type { Db } from '../db/database.js';
import { countApiKeys, createApiKey, type CreatedKey } from './apiKeys.js';

/**
 * Outside production, the first start with no keys creates a development key (all scopes) so a
 * newcomer can call the API at once. Returns it so the caller prints it once; undefined otherwise.
 */
export async function ensureDevelopmentKey(db: Db, options: { production: boolean; now: number }): Promise<CreatedKey | undefined> {
  if (options.production) return undefined;
  if ((await countApiKeys(db)) > 0) return undefined;
  return createApiKey(db, { owner: 'dev', scopes: ['launches:read', 'launches:write', 'admin'], name: 'development key', now: options.now });
}
