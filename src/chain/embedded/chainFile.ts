import { existsSync } from 'node:fs';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../db/database.js';
import type { Logger } from '../../lib/logger.js';

/** The chain's tables and the `service_meta` keys that are the chain's (payer, genesis). */
const CHAIN_TABLES = ['chain_accounts', 'chain_signatures', 'chain_address_signatures'] as const;
const CHAIN_META_KEYS = ['chain.embedded.payer', 'chain.embedded.genesis'];

/**
 * Where the embedded chain keeps its state beside a SQLite service database: a file of its own
 * (`data/launch-service.sqlite` → `data/launch-service-chain.sqlite`), written by the chain alone,
 * so the chain and the service never wait on each other's write lock or invalidate each other's
 * page cache (they run on two threads, CHAIN_THREAD). Undefined for an in-memory database: the
 * chain then lives in it.
 */
export function embeddedChainFile(databasePath: string): string | undefined {
  if (databasePath === ':memory:' || databasePath === '') return undefined;
  return `${databasePath.replace(/\.(sqlite3?|db)$/i, '')}-chain.sqlite`;
}

/**
 * Opens (and migrates) the embedded chain's own file. A data directory from before the chain had a
 * file of its own keeps its chain in the service database: the first open copies it over (accounts,
 * signatures and history, the payer and the genesis) in one transaction, so the payer, every mint
 * and every recorded transaction stay as they were. The service database's copy is left in place,
 * unread.
 */
export async function openEmbeddedChainStore(file: string, options: { legacyFrom?: string | undefined; logger?: Logger | undefined } = {}): Promise<OpenedDatabase> {
  const fresh = !existsSync(file);
  const store = openDatabase(file, { logger: options.logger });
  try {
    await migrateToLatest(store.db);
    if (fresh && options.legacyFrom !== undefined && existsSync(options.legacyFrom)) copyLegacyChain(store, options.legacyFrom, options.logger);
    return store;
  } catch (error) {
    await store.close();
    throw error;
  }
}

function copyLegacyChain(store: OpenedDatabase, legacyFile: string, logger: Logger | undefined): void {
  const { sqlite } = store;
  sqlite.prepare('attach database ? as legacy').run(legacyFile);
  try {
    const hasChain = sqlite.prepare(`select count(*) as n from legacy.sqlite_master where type = 'table' and name = 'chain_accounts'`).get() as { n: number };
    if (hasChain.n === 0) return;
    const copied = sqlite.transaction(() => {
      const counts: Record<string, number> = {};
      for (const table of CHAIN_TABLES) {
        const columns = (sqlite.prepare(`select name from pragma_table_info(?)`).all(table) as Array<{ name: string }>).map((c) => `"${c.name}"`).join(', ');
        counts[table] = sqlite.prepare(`insert or ignore into main.${table} (${columns}) select ${columns} from legacy.${table}`).run().changes;
      }
      const keys = CHAIN_META_KEYS.map(() => '?').join(', ');
      counts.service_meta = sqlite.prepare(`insert or ignore into main.service_meta (key, value) select key, value from legacy.service_meta where key in (${keys})`).run(...CHAIN_META_KEYS).changes;
      return counts;
    })();
    if (copied.chain_accounts || copied.service_meta) logger?.info({ from: legacyFile, copied }, 'embedded chain state moved to its own file');
  } finally {
    sqlite.prepare('detach database legacy').run();
  }
}
