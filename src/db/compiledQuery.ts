import type { CompiledQuery, Compilable, Kysely, QueryResult } from 'kysely';
import { isPostgres } from './dialect.js';
import { runDirectSqlite } from './directSqlite.js';

/**
 * A hot statement built and compiled by kysely once per dialect (and shape), then run many times
 * with new parameter values: building and compiling a query costs far more JavaScript than running
 * a cached prepared statement (kysely was a tenth of the service's CPU in the pipeline's profile).
 *
 * `build` receives the database and `p`, whose properties stand for the parameters: use `p.id`
 * wherever the query takes a value (`where('id', '=', p.id)`, `set({ status: p.status })`,
 * `sql\`${p.now}\``). They compile to placeholders that each run fills from its `params`. `build`
 * must not branch on a parameter's value, and a list of values (`in (…)`) has a length: pass it as
 * the `shape` (`p.id0`, `p.id1`, … built for that length), one compiled form per shape.
 *
 * The statement text is kysely's own, so the query stays portable (docs/architecture.md, SQLite and PostgreSQL); dialect branches
 * inside `build` (`isPostgres`, `leaseNow`) are taken once per dialect.
 */
export interface CompiledStatement<P, O = unknown> {
  /** Runs it on `db` (a database or a transaction) with these parameter values. */
  execute(db: Kysely<any>, params: P, shape?: string | number): Promise<QueryResult<O>>;
  /** The rows it returns. */
  rows(db: Kysely<any>, params: P, shape?: string | number): Promise<O[]>;
  /** The first row it returns, if any. */
  first(db: Kysely<any>, params: P, shape?: string | number): Promise<O | undefined>;
  /** How many rows it changed (an update, insert or delete without RETURNING). */
  changed(db: Kysely<any>, params: P, shape?: string | number): Promise<number>;
}

/** The stand-ins `build` uses for parameters: each property is typed as its parameter. */
export type Params<P> = { readonly [K in keyof P]: P[K] };

const MARK = '\u0000kysely-param:';

interface Template {
  sql: string;
  /** For each placeholder: the parameter's name, or a constant the query itself holds. */
  slots: Array<{ name: string } | { value: unknown }>;
  query: CompiledQuery['query'];
  queryId: CompiledQuery['queryId'];
}

export function compiledQuery<P extends object, O = unknown>(
  build: (db: Kysely<any>, p: Params<P>, shape: string | number | undefined) => Compilable<O>,
): CompiledStatement<P, O> {
  const templates = new Map<string, Template>();

  const templateFor = (db: Kysely<any>, shape: string | number | undefined): Template => {
    const key = `${isPostgres(db) ? 'pg' : 'sqlite'}:${shape ?? ''}`;
    let template = templates.get(key);
    if (template) return template;
    const used = new Set<string>();
    const p = new Proxy({} as Params<P>, {
      get(_target, name) {
        if (typeof name !== 'string') return undefined;
        used.add(name);
        return `${MARK}${name}`;
      },
    });
    const compiled = build(db, p, shape).compile();
    if (compiled.sql.includes(MARK)) throw new Error('compiledQuery: a parameter was inlined into the SQL text; use it only where the query takes a value');
    const slots = compiled.parameters.map((value) => (typeof value === 'string' && value.startsWith(MARK) ? { name: value.slice(MARK.length) } : { value }));
    for (const name of used) {
      if (!slots.some((s) => 'name' in s && s.name === name)) throw new Error(`compiledQuery: parameter ${name} is not a placeholder of the query`);
    }
    template = { sql: compiled.sql, slots, query: compiled.query, queryId: compiled.queryId };
    templates.set(key, template);
    return template;
  };

  const execute = (db: Kysely<any>, params: P, shape?: string | number): Promise<QueryResult<O>> => {
    const template = templateFor(db, shape);
    const values = template.slots.map((slot) => {
      if (!('name' in slot)) return slot.value;
      const value = (params as Record<string, unknown>)[slot.name];
      if (value === undefined) throw new Error(`compiledQuery: no value for parameter ${slot.name}`);
      return value;
    });
    // On SQLite it runs on the connection directly where it safely can (directSqlite.ts).
    try {
      const direct = runDirectSqlite<O>(db, template.sql, values);
      if (direct) return Promise.resolve(direct);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    // The root node goes along so kysely's executor (and any plugin) sees what kind of query it is.
    const query: CompiledQuery<O> = { sql: template.sql, parameters: values, query: template.query, queryId: template.queryId };
    return db.executeQuery(query);
  };

  return {
    execute,
    rows: async (db, params, shape) => (await execute(db, params, shape)).rows,
    first: async (db, params, shape) => (await execute(db, params, shape)).rows[0],
    changed: async (db, params, shape) => Number((await execute(db, params, shape)).numAffectedRows ?? 0n),
  };
}
