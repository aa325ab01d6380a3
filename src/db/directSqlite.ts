import type SqliteDatabase from 'better-sqlite3';
import { SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type DialectAdapter, type Driver, type QueryResult, type SqliteDialectConfig } from 'kysely';
import type { MainWriteLock } from './writeLock.js';
import type { Kysely } from 'kysely';

/** Prepared statements by SQL text (the service's statement cache, see database.ts). */
export interface StatementSource {
  prepare(sql: string): SqliteDatabase.Statement;
  /** The connection is inside BEGIN … COMMIT (better-sqlite3's `inTransaction`). */
  readonly inTransaction: boolean;
}

/** kysely's SQLite adapter, carrying the connection's statement source so a transaction can reach it. */
class DirectSqliteAdapter extends SqliteAdapter {
  constructor(
    readonly statements: StatementSource,
    readonly writeLock: () => MainWriteLock | undefined,
  ) {
    super();
  }
}

/**
 * kysely's SQLite dialect whose adapter (shared by the database and its transactions) knows the
 * statements, and whose driver takes the shared write lock (writeLock.ts) with the connection once
 * one is installed (`useWriteLock`: the chain thread shares the file).
 */
export class DirectSqliteDialect extends SqliteDialect {
  readonly #statements: StatementSource;
  readonly #config: SqliteDialectConfig;
  #writeLock: MainWriteLock | undefined;

  constructor(config: SqliteDialectConfig, statements: StatementSource) {
    super(config);
    this.#config = config;
    this.#statements = statements;
  }

  override createAdapter(): DialectAdapter {
    return new DirectSqliteAdapter(this.#statements, () => this.#writeLock);
  }

  override createDriver(): Driver {
    return new LockingSqliteDriver(this.#config, () => this.#writeLock);
  }

  /** From now on, every use of the connection holds `lock` too. */
  useWriteLock(lock: MainWriteLock | undefined): void {
    this.#writeLock = lock;
  }
}

/** kysely's SQLite driver, taking the shared write lock (when there is one) after the connection and releasing it before. */
class LockingSqliteDriver extends SqliteDriver {
  #held: MainWriteLock | undefined;

  constructor(
    config: SqliteDialectConfig,
    private readonly lock: () => MainWriteLock | undefined,
  ) {
    super(config);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    const lock = this.lock();
    if (lock) {
      const waiting = lock.acquire();
      if (waiting) await waiting;
    }
    this.#held = lock;
    return connection;
  }

  override async releaseConnection(): Promise<void> {
    const held = this.#held;
    this.#held = undefined;
    held?.release();
    await super.releaseConnection();
  }
}

/**
 * Runs a statement on SQLite's connection at once, as kysely's SQLite driver would (same prepared
 * statement, same result shape, same errors), without kysely's executor: its connection provider,
 * plugin pass and promise chain cost ~4 KB of garbage per statement, and the dispatcher and the
 * runner run thousands a second (each scavenge that garbage brings pauses every delivery in flight
 * for ~5 ms; docs/benchmarks.md). better-sqlite3 runs the statement to completion synchronously, so
 * nothing else runs on the connection meanwhile. Where:
 * - in an open transaction (`db` is it): the transaction holds SQLite's one connection (kysely's
 *   driver lets no other statement onto it until the commit);
 * - outside any (`db` is the database): only while no transaction is open on the connection and,
 *   with the chain thread sharing the file, the write lock is free at once (taken and released around
 *   the statement): the statement autocommits as it would have once kysely handed it the connection.
 *
 * Returns undefined anywhere else (PostgreSQL, a transaction open while `db` is the database, the
 * chain thread holding or wanting the write lock), where the caller goes through kysely (which
 * waits its turn); also for a transaction already committed or rolled back (the connection is
 * outside any transaction), so kysely raises its error for it as before.
 */
export function runDirectSqlite<R>(db: Kysely<any>, sql: string, parameters: readonly unknown[]): QueryResult<R> | undefined {
  const executor = db.getExecutor();
  const adapter = executor.adapter;
  // A plugin (none in the service) rewrites queries or results: only kysely's executor runs it.
  if (!(adapter instanceof DirectSqliteAdapter) || executor.plugins.length > 0) return undefined;
  if (db.isTransaction) return adapter.statements.inTransaction ? runStatement<R>(adapter.statements, sql, parameters) : undefined;
  if (adapter.statements.inTransaction) return undefined;
  const lock = adapter.writeLock();
  if (lock && !lock.tryAcquire()) return undefined;
  try {
    return runStatement<R>(adapter.statements, sql, parameters);
  } finally {
    lock?.release();
  }
}

function runStatement<R>(statements: StatementSource, sql: string, parameters: readonly unknown[]): QueryResult<R> {
  const stmt = statements.prepare(sql);
  if (stmt.reader) return { rows: stmt.all(parameters) as R[] };
  const { changes, lastInsertRowid } = stmt.run(parameters);
  return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
}
