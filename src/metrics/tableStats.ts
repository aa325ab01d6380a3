import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import type { Clock } from '../lib/clock.js';
import { postgresTableSizes, sqliteTableSizes, type TableSize } from './sources.js';

export type { TableSize } from './sources.js';

/**
 * Rows and bytes per table for `/metrics`, computed in the background and cached: a scrape reads
 * the last figures and never waits for new ones. On a SQLite file the figures come from a worker
 * thread on a read-only connection of its own (exact `count(*)` and `dbstat` pages, which read every
 * page of the file: 0.8 s for a 540 MB file, far too long for the event loop that serves requests
 * and the dispatcher); on PostgreSQL from one query of the statistics (an estimate of rows).
 */
export interface TableStats {
  /**
   * The last figures (undefined before the first computation ends, and after one failed: no figures
   * rather than old ones shown as current); starts a refresh when they are stale.
   */
  read(): readonly TableSize[] | undefined;
  /** Computes the figures now and waits for them (tests; a scrape never does). */
  refresh(): Promise<void>;
  /** Ends a computation in progress. */
  close(): Promise<void>;
}

/** How old the figures may get before a scrape starts the next computation. */
export const TABLE_STATS_REFRESH_MS = 5 * 60_000;

// Plain CommonJS evaluated in the worker, so it runs the same under tsx, vitest and the bundle. Each
// statement is its own short read transaction (one table or one index at a time), so no snapshot
// is held across the whole file while the checkpointer wants to restart the WAL.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path, { readonly: true, fileMustExist: true });
try {
  db.pragma('busy_timeout = 5000');
  const objects = db.prepare("select name, tbl_name as tbl, type from sqlite_schema where type in ('table', 'index') and substr(tbl_name, 1, 7) <> 'sqlite_'").all();
  const bytesOf = db.prepare('select coalesce(sum(pgsize), 0) from dbstat where name = ? and aggregate = 1').pluck();
  const sizes = new Map();
  for (const o of objects) if (o.type === 'table') sizes.set(o.name, { table: o.name, rows: db.prepare('select count(*) from "' + o.name.replace(/"/g, '""') + '"').pluck().get(), bytes: 0 });
  for (const o of objects) {
    const size = sizes.get(o.tbl);
    if (size) size.bytes += bytesOf.get(o.name);
  }
  parentPort.postMessage({ sizes: [...sizes.values()] });
} finally {
  db.close();
}
`;

/**
 * `sqlitePath`: the service's SQLite file (a worker reads it); `:memory:` cannot be opened twice,
 * so an in-memory database (tests only) is measured on its own connection.
 */
export function createTableStats(deps: { db: Db; clock: Clock; sqlitePath?: string; refreshMs?: number; onError?: (error: unknown) => void }): TableStats {
  const refreshMs = deps.refreshMs ?? TABLE_STATS_REFRESH_MS;
  let last: readonly TableSize[] | undefined;
  let startedAt: number | undefined;
  let running: Promise<void> | undefined;
  let worker: Worker | undefined;
  let closed = false;

  function compute(): Promise<TableSize[]> {
    if (isPostgres(deps.db)) return postgresTableSizes(deps.db);
    if (deps.sqlitePath === undefined || deps.sqlitePath === ':memory:') return sqliteTableSizes(deps.db);
    const path = deps.sqlitePath;
    return new Promise((resolve, reject) => {
      const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, module: createRequire(import.meta.url).resolve('better-sqlite3') } });
      worker = w;
      // A computation never keeps the process alive.
      w.unref();
      let sizes: TableSize[] | undefined;
      w.on('message', (message: { sizes: TableSize[] }) => (sizes = message.sizes));
      w.on('error', reject);
      w.on('exit', (code) => {
        if (worker === w) worker = undefined;
        if (sizes) resolve(sizes);
        else reject(new Error(`table sizes worker exited with code ${code}`));
      });
    });
  }

  function refresh(): Promise<void> {
    if (closed) return Promise.resolve();
    running ??= (async () => {
      startedAt = deps.clock.now();
      try {
        const sizes = await compute();
        if (!closed) last = sizes;
      } catch (error) {
        last = undefined;
        throw error;
      } finally {
        running = undefined;
      }
    })();
    return running;
  }

  return {
    read() {
      const now = deps.clock.now();
      if (!closed && running === undefined && (startedAt === undefined || now - startedAt >= refreshMs)) {
        // A failed computation clears the figures and is tried again after the interval.
        refresh().catch((error: unknown) => deps.onError?.(error));
      }
      return last;
    },
    refresh,
    async close() {
      closed = true;
      await worker?.terminate();
      await running?.catch(() => undefined);
    },
  };
}
