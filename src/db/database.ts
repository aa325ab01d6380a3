import { open, type FileHandle } from 'node:fs/promises';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { startBackgroundCheckpointer, WAL_RESTART_FRAMES, type BackgroundCheckpointer } from './checkpointer.js';
import { DirectSqliteDialect, type StatementSource } from './directSqlite.js';
import { prepareAutoVacuum, reclaimFreePages, type AutoVacuumMode } from './incrementalVacuum.js';
import { parseTextArray } from './pgArrays.js';
import { notePostgresPool, preparePostgresStatements } from './pgStatements.js';
import { createWriteLockBuffer, mainWriteLock } from './writeLock.js';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './schema.js';
import { makeDatabaseFilePrivate } from './privateFile.js';

export type Db = Kysely<Database>;
/** Where the checkpointer's warnings (and the start's word on the file's auto_vacuum) go: pino's shape, named here because db/ sits beside lib/, not above it. */
export interface DatabaseLogger {
  child(bindings: Record<string, unknown>): { warn(obj: object, msg: string): void; info(obj: object, msg: string): void; debug(obj: object, msg: string): void };
}
export type Tx = Transaction<Database>;
/** Either the database or an open transaction: database operations accept both. */
export type DbOrTx = Db | Tx;

export interface OpenedDatabase {
  db: Db;
  sqlite: SqliteDatabase.Database;
  /**
   * Makes every transaction committed so far durable (fdatasync of the WAL, on libuv's thread pool,
   * not on the event loop): under `synchronous = NORMAL` a commit reaches the disk only at the next
   * checkpoint, and this is the way to have one durable now without holding the loop in SQLite.
   */
  syncWal(): Promise<void>;
  /**
   * Shares the write lock with a second connection on another thread (the chain thread, see
   * writeLock.ts): every later use of this connection holds it. Returns the shared memory to hand
   * that thread, and `reset` to free a lock the thread held or wanted when it ended.
   */
  shareWriteLock(): { buffer: SharedArrayBuffer; reset(): void };
  /**
   * Gives at most `pages` free pages back to the file system in one short write transaction (a file
   * with `auto_vacuum = INCREMENTAL`; on any other, nothing): the pages freed and still free. Holds
   * the connection, so it runs between other queries and transactions, never inside one.
   */
  reclaimFreePages(pages: number): Promise<{ freed: number; left: number }>;
  close(): Promise<void>;
}

/** The store the config names: PostgreSQL when DATABASE_URL is a postgres:// URL, else the SQLite file. */
export function openConfiguredDatabase(
  config: { databasePath: string; postgres: { url: string; poolSize: number; idleTransactionTimeoutMs: number } | undefined },
  options: { logger?: DatabaseLogger } = {},
): {
  db: Db;
  syncWal?: () => Promise<void>;
  shareWriteLock?: OpenedDatabase['shareWriteLock'];
  reclaimFreePages?: OpenedDatabase['reclaimFreePages'];
  close(): Promise<void>;
} {
  return config.postgres
    ? openPostgres(config.postgres.url, { poolSize: config.postgres.poolSize, idleTransactionTimeoutMs: config.postgres.idleTransactionTimeoutMs })
    : openDatabase(config.databasePath, { logger: options.logger });
}

// Rows look the same on both stores: bigint (int8: times in ms, count(*)) and numeric (sum, avg)
// come back as JS numbers, as SQLite returns them, instead of pg's default strings. Every value the
// service keeps in these types is far below 2^53; u64 amounts are stored as text on both.
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const TEXT_ARRAY_OID = 1009;
const toNumber = (value: string) => Number(value);
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID || oid === NUMERIC_OID ? toNumber : oid === TEXT_ARRAY_OID && format !== 'binary' ? textArrayOnce() : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * A text[] parser for one result column that parses a value repeated on the next rows only once
 * (each row still gets an array of its own), and split at commas when nothing in it is quoted
 * (pgArrays.ts): the dispatcher's turn returns the ids it settled on every claimed row
 * (settle_and_claim_webhook_deliveries), and parsing them character by character once per row was
 * about 2 % of the dispatcher's CPU.
 */
function textArrayOnce(): (value: string) => Array<string | null> {
  let last: string | undefined;
  let parsed: Array<string | null> = [];
  return (value) => {
    if (value !== last) {
      parsed = parseTextArray(value, pgTextArray);
      last = value;
    }
    return parsed.slice();
  };
}
const pgTextArray = (pg.types.getTypeParser as (oid: number, format: 'text') => (value: string) => Array<string | null>)(TEXT_ARRAY_OID, 'text');

/**
 * Opens a pool of `poolSize` connections to a PostgreSQL server (`postgres://user:pass@host:port/db`).
 * Does not migrate. The SQLite-only parts (pragmas, the background checkpointer, the writer lock)
 * do not apply; dialect differences in queries are in `dialect.ts`. Each session is ended by the
 * server once idle inside a transaction for `idleTransactionTimeoutMs` (default 10 s, 0: never; see
 * DEFAULT_IDLE_TRANSACTION_TIMEOUT_MS in config.ts): a process stalled mid-transaction releases its
 * locks, and the pool replaces the ended connection when the process resumes. Sessions run with
 * `jit = off`.
 */
export function openPostgres(url: string, options: { poolSize?: number; idleTransactionTimeoutMs?: number } = {}): { db: Db; pool: pg.Pool; close(): Promise<void> } {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    types: pgTypes,
    idle_in_transaction_session_timeout: options.idleTransactionTimeoutMs ?? 10_000,
    // No JIT compilation: every statement of the service is short, and a plan whose estimate is
    // high (a table not yet analyzed, as after a bulk load) was JIT-compiled on every run, 40-100 ms
    // each (the dispatcher's lane walk, docs/benchmarks.md).
    options: '-c jit=off',
  });
  // An idle connection the server dropped: the pool discards it and the next query opens another.
  pool.on('error', () => undefined);
  // A connection the server ends while it is checked out (a transaction idle past the timeout while
  // this process stalled, a restarted server): the pool listens only to idle ones, and an 'error'
  // event nobody listens to would end the process. The error reaches the transaction instead — its
  // next statement fails — and the pool discards the connection when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    // The hot statements (sqlText.ts) are prepared once per connection.
    preparePostgresStatements(client);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  notePostgresPool(db, pool);
  let closed = false;
  return {
    db,
    pool,
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

/**
 * Opens the SQLite file with WAL and a busy timeout. Does not migrate. A new file is made with
 * `auto_vacuum = INCREMENTAL` (see incrementalVacuum.ts); with a logger, an older file's other mode
 * is logged with how to switch it, unless `vacuumAdvice` is false (a file `npm run vacuum` does not
 * switch: the embedded chain's own store beside a PostgreSQL database). A file database checkpoints
 * its WAL from a worker thread (see {@link startBackgroundCheckpointer}) unless
 * `backgroundCheckpoint` is false, in which case SQLite's automatic checkpoint stays on unless
 * `autoCheckpoint` is false too.
 */
export function openDatabase(path: string, options: { backgroundCheckpoint?: boolean; autoCheckpoint?: boolean; logger?: DatabaseLogger; vacuumAdvice?: boolean } = {}): OpenedDatabase {
  makeDatabaseFilePrivate(path);
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma('busy_timeout = 5000');
  // Before anything creates a table: a new file can then give deleted rows' pages back.
  const mode = path === ':memory:' ? undefined : prepareAutoVacuum(sqlite);
  const incremental = mode === 'INCREMENTAL';
  if (options.vacuumAdvice !== false) adviseOnAutoVacuum(options.logger, path, mode);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  let checkpointer: BackgroundCheckpointer | undefined;
  // A second connection to a file whose first connection checkpoints in the background (the chain thread's).
  if (options.autoCheckpoint === false) sqlite.pragma('wal_autocheckpoint = 0');
  if (path !== ':memory:' && options.backgroundCheckpoint !== false) {
    sqlite.pragma('wal_autocheckpoint = 0');
    // A WAL the checkpointer restarted is cut back to the restart size (see startBackgroundCheckpointer).
    sqlite.pragma(`journal_size_limit = ${WAL_RESTART_FRAMES * 4096}`);
    const log = options.logger?.child({ component: 'sqlite-checkpointer' });
    checkpointer = startBackgroundCheckpointer(path, {
      // kysely's SQLite driver has one connection: holding it idle holds every query of this process.
      pauseDatabase: (during) => db.connection().execute(during),
      // A WAL that is not checkpointed grows until the disk is full: say so.
      onError: (message) => log?.warn({ error: message }, 'WAL checkpoint failed'),
      onRestart: ({ frames, busy }) =>
        busy
          ? log?.warn({ frames }, 'WAL restart checkpoint could not finish: another connection reads an older snapshot; trying again in 30 s')
          : log?.debug({ frames }, 'WAL restarted'),
    });
  }
  const statements = withStatementCache(sqlite, () => void checkpointer?.stop());
  // The statement cache is also reachable from a transaction, for statements run on it directly (directSqlite.ts).
  const dialect = new DirectSqliteDialect({ database: statements }, statements);
  const db = new Kysely<Database>({ dialect });
  let shared: { buffer: SharedArrayBuffer; reset(): void } | undefined;
  let closed = false;
  // One descriptor of the WAL, opened at the first sync: fdatasync through any descriptor of a file
  // flushes the file. The WAL lives as long as this connection (a restart rewrites it in place).
  let wal: Promise<FileHandle> | undefined;
  return {
    db,
    sqlite,
    shareWriteLock() {
      if (!shared) {
        const buffer = createWriteLockBuffer();
        const lock = mainWriteLock(buffer);
        dialect.useWriteLock(lock);
        shared = { buffer, reset: () => lock.reset() };
      }
      return shared;
    },
    async reclaimFreePages(pages) {
      if (!incremental || closed) return { freed: 0, left: 0 };
      // kysely's one connection, held: no query or transaction of this process is mid-way meanwhile.
      return db.connection().execute(async () => reclaimFreePages(sqlite, pages));
    },
    async syncWal() {
      if (path === ':memory:' || closed) return;
      wal ??= open(`${path}-wal`, 'r');
      await (await wal).datasync();
    },
    async close() {
      if (closed) return;
      closed = true;
      await wal?.then((handle) => handle.close()).catch(() => undefined);
      // The worker's connection closes first, so ours is the last and SQLite removes the WAL.
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/** The start's word on a file made before the service used `auto_vacuum = INCREMENTAL` (docs/configuration.md, Retention). */
function adviseOnAutoVacuum(logger: DatabaseLogger | undefined, path: string, mode: AutoVacuumMode | undefined): void {
  const log = logger?.child({ component: 'sqlite' });
  if (mode === 'NONE') {
    log?.warn({ path, autoVacuum: mode }, 'this SQLite file was made with auto_vacuum NONE: space freed by retention is reused but never returned to the disk; to switch it to INCREMENTAL, stop the service and run `npm run vacuum` once (a full VACUUM: it rewrites the file; docs/configuration.md, Retention)');
  } else if (mode === 'FULL') {
    log?.info({ path, autoVacuum: mode }, 'this SQLite file uses auto_vacuum FULL: each commit that frees pages returns them to the disk itself, inside that commit (a retention sweep holds the write lock longer); to switch it to INCREMENTAL, which the service returns in short steps, stop the service and run `npm run vacuum` once (no VACUUM needed: quick; docs/configuration.md, Retention)');
  }
}

/**
 * Kysely's SQLite driver prepares every query afresh; the dispatcher and the health check run the
 * same few statements thousands of times, so reuse them (LRU by SQL text). Safe because
 * better-sqlite3 runs each statement to completion synchronously (nothing here streams).
 */
function withStatementCache(sqlite: SqliteDatabase.Database, onClose: () => void, max = 256): StatementSource & { close(): void } {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => {
      onClose();
      sqlite.close();
    },
    prepare(sql) {
      let stmt = cache.get(sql);
      if (stmt) cache.delete(sql);
      else stmt = sqlite.prepare(sql);
      cache.set(sql, stmt);
      if (cache.size > max) cache.delete(cache.keys().next().value as string);
      return stmt;
    },
    get inTransaction() {
      return sqlite.inTransaction;
    },
  };
}

/**
 * A migration run that failed: `migrationName` names the migration that failed; undefined when none
 * could run (the database could not be reached: no server at that host, no such database, refused).
 */
export class MigrationError extends Error {
  constructor(
    readonly migrationName: string | undefined,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(migrationName === undefined ? `Migrations could not run: ${reason}` : `Migration ${migrationName} failed: ${reason}`, options);
    this.name = 'MigrationError';
  }
}

/** Runs every pending migration; throws {@link MigrationError} (stopping the process) when one fails. */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  // Migration numbers are handed out to parallel branches, so one may land after a higher one has
  // already run on a data directory; each migration only adds its own objects, so order among
  // them does not matter and a late lower number still runs.
  const migrator = new Migrator({ db, provider: migrationProvider, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const reason = error instanceof Error ? error.message : String(error ?? 'unknown error');
    throw new MigrationError(failed?.migrationName, reason, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
