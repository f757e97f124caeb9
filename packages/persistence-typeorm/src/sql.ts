import type BetterSqlite3 from 'better-sqlite3';
import type { Pool } from 'pg';
import { QueryFailedError, type DataSource, type EntityManager } from 'typeorm';
import type { Dialect } from './dialect';

/*
 * Hand-written statements run straight through the driver. The requests that every client
 * makes all the time (authenticating, reading an app, listing apps and releases, changing
 * config) use these instead of TypeORM's query builder, whose building of the SQL and
 * hydration of entities on every call cost several times the query itself. Failures are
 * wrapped in TypeORM's QueryFailedError, so that constraint and availability translation
 * treat them like any other.
 */

/** One SQL statement in both dialects: written with `?` placeholders, numbered for PostgreSQL. */
export interface Statement {
  readonly sqlite: string;
  readonly postgres: string;
}

/**
 * A statement from SQL with `?` placeholders (never inside literals or identifiers), or
 * with a PostgreSQL variant where the dialects differ.
 */
export function statement(sqlite: string, postgres: string = sqlite): Statement {
  let n = 0;
  return { sqlite, postgres: postgres.replace(/\?/g, () => `$${++n}`) };
}

/** Runs statements on one connection or in one transaction. */
export interface SqlRunner {
  /** The rows a statement returns, as the driver decodes them. */
  rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]>;
  /** Runs a statement that returns no rows. */
  run(statement: Statement, params: readonly unknown[]): Promise<void>;
}

/** Called for a statement that took at least `SLOW_STATEMENT_MS`, as TypeORM's logger is for its own. */
export type SlowStatementReport = (ms: number, query: string) => void;

/** The duration from which a statement is reported as slow. */
export const SLOW_STATEMENT_MS = 1000;

function failed(text: string, params: readonly unknown[], error: unknown): QueryFailedError {
  // Not `instanceof Error`: errors made in another realm (Node's own, under a test runner's
  // sandbox) would fail it and lose their code.
  const driverError = typeof error === 'object' && error !== null ? (error as Error) : new Error(String(error));
  return new QueryFailedError(text, [...params], driverError);
}

/** Statements on a better-sqlite3 connection, each prepared once and kept. */
export class SqliteConnectionRunner implements SqlRunner {
  private readonly prepared = new Map<string, BetterSqlite3.Statement>();

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly slow: SlowStatementReport,
  ) {}

  /** The connection TypeORM opened for `dataSource`. */
  static of(dataSource: DataSource, slow: SlowStatementReport): SqliteConnectionRunner {
    const driver = dataSource.driver as unknown as { databaseConnection: BetterSqlite3.Database };
    return new SqliteConnectionRunner(driver.databaseConnection, slow);
  }

  private prepare(text: string): BetterSqlite3.Statement {
    let prepared = this.prepared.get(text);
    if (prepared === undefined) {
      prepared = this.db.prepare(text);
      this.prepared.set(text, prepared);
    }
    return prepared;
  }

  private timed<R>(text: string, params: readonly unknown[], execute: (prepared: BetterSqlite3.Statement) => R): R {
    const started = Date.now();
    try {
      return execute(this.prepare(text));
    } catch (error) {
      throw failed(text, params, error);
    } finally {
      const ms = Date.now() - started;
      if (ms >= SLOW_STATEMENT_MS) this.slow(ms, text);
    }
  }

  async rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    const values = bindable(params);
    // A statement that returns nothing (an INSERT without RETURNING) has no rows, as through TypeORM.
    return this.timed(statement.sqlite, params, (prepared) => {
      if (prepared.reader) return prepared.all(...values) as T[];
      prepared.run(...values);
      return [];
    });
  }

  async run(statement: Statement, params: readonly unknown[]): Promise<void> {
    const values = bindable(params);
    // A statement that returns rows (RETURNING) must be stepped through them.
    this.timed(statement.sqlite, params, (prepared) => (prepared.reader ? prepared.all(...values) : prepared.run(...values)));
  }
}

/** better-sqlite3 binds no booleans: 1 and 0, as TypeORM passes them. */
function bindable(params: readonly unknown[]): readonly unknown[] {
  return params.some((param) => typeof param === 'boolean') ? params.map((param) => (typeof param === 'boolean' ? Number(param) : param)) : params;
}

/** Statements on pooled PostgreSQL connections, one connection per statement. */
export class PostgresPoolRunner implements SqlRunner {
  constructor(
    private readonly pool: Pool,
    private readonly slow: SlowStatementReport,
  ) {}

  /** The pool TypeORM opened for `dataSource`. */
  static of(dataSource: DataSource, slow: SlowStatementReport): PostgresPoolRunner {
    return new PostgresPoolRunner((dataSource.driver as unknown as { master: Pool }).master, slow);
  }

  async rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    const started = Date.now();
    try {
      return (await this.pool.query(statement.postgres, params as unknown[])).rows as T[];
    } catch (error) {
      throw failed(statement.postgres, params, error);
    } finally {
      const ms = Date.now() - started;
      if (ms >= SLOW_STATEMENT_MS) this.slow(ms, statement.postgres);
    }
  }

  async run(statement: Statement, params: readonly unknown[]): Promise<void> {
    await this.rows(statement, params);
  }
}

/** The runners of SQLite connections that transactions run on, by connection: their statements stay prepared. */
const transactionRunners = new WeakMap<object, SqliteConnectionRunner>();

/**
 * The connection of a SQLite transaction's manager, as a runner of prepared statements.
 * TypeORM's own `query` adds its event broadcasts, logging and result objects to each
 * statement, several times the cost of running a small one; the connection is the same.
 */
function sqliteRunnerOf(manager: EntityManager): SqliteConnectionRunner | null {
  const driver = manager.connection.driver as unknown as { databaseConnection?: BetterSqlite3.Database };
  const db = driver.databaseConnection;
  if (db === undefined || manager.queryRunner === undefined) return null;
  let runner = transactionRunners.get(db);
  if (runner === undefined) {
    const logger = manager.connection.logger;
    runner = new SqliteConnectionRunner(db, (ms, query) => logger.logQuerySlow(ms, query));
    transactionRunners.set(db, runner);
  }
  return runner;
}

/** Statements inside a transaction (or another unit) that TypeORM runs for `manager`. */
export class ManagerRunner implements SqlRunner {
  private readonly sqlite: SqliteConnectionRunner | null;

  constructor(
    private readonly dialect: Dialect,
    private readonly manager: EntityManager,
  ) {
    this.sqlite = dialect === 'sqlite' ? sqliteRunnerOf(manager) : null;
  }

  async rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    if (this.sqlite !== null) return this.sqlite.rows<T>(statement, params);
    const text = statement[this.dialect];
    const runner = this.manager.queryRunner;
    if (runner === undefined) return (await this.manager.query(text, [...params])) as T[];
    const result = await runner.query(text, [...params], true);
    return (result.records ?? []) as T[];
  }

  async run(statement: Statement, params: readonly unknown[]): Promise<void> {
    if (this.sqlite !== null) return this.sqlite.run(statement, params);
    const text = statement[this.dialect];
    const runner = this.manager.queryRunner;
    if (runner === undefined) await this.manager.query(text, [...params]);
    else await runner.query(text, [...params], true);
  }
}

// ---- values as the drivers hand them over and take them -------------------------------

/**
 * An instant from a `datetime` (SQLite: UTC text `YYYY-MM-DD HH:MM:SS.SSS`, as TypeORM
 * writes it) or `timestamptz` (PostgreSQL: a Date) column.
 */
export function readInstant(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'string') return value.length === 23 ? fromSqliteText(value) : new Date(`${value.replace(' ', 'T')}Z`);
  return new Date(Number(value));
}

const digitsAt = (text: string, start: number, end: number): number => {
  let n = 0;
  for (let i = start; i < end; i++) n = n * 10 + (text.charCodeAt(i) - 48);
  return n;
};

/**
 * `YYYY-MM-DD HH:MM:SS.SSS` read field by field: every row of every list has two or more,
 * and this is several times faster than having Date parse the text.
 */
function fromSqliteText(text: string): Date {
  const year = digitsAt(text, 0, 4);
  // Date.UTC reads years below 100 as 19xx.
  if (year < 100 || !SQLITE_INSTANT.test(text)) return new Date(`${text.replace(' ', 'T')}Z`);
  return new Date(
    Date.UTC(
      year,
      digitsAt(text, 5, 7) - 1,
      digitsAt(text, 8, 10),
      digitsAt(text, 11, 13),
      digitsAt(text, 14, 16),
      digitsAt(text, 17, 19),
      digitsAt(text, 20, 23),
    ),
  );
}

const SQLITE_INSTANT = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

/** Like readInstant, for a nullable column. */
export function readOptionalInstant(value: unknown): Date | null {
  return value === null || value === undefined ? null : readInstant(value);
}

/** A boolean column: SQLite keeps 0 and 1. */
export function readBoolean(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}

/** A JSON column: SQLite keeps the text; pg has parsed it already. */
export function readJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** An integer column; PostgreSQL's bigint and count(*) arrive as strings. */
export function readInteger(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

/** An instant as the dialect's column takes it, in the encoding TypeORM uses. */
export function writeInstant(dialect: Dialect, date: Date): string | Date {
  return dialect === 'sqlite' ? date.toISOString().replace('T', ' ').replace('Z', '') : new Date(date.getTime());
}

/** Like writeInstant, for a nullable column. */
export function writeOptionalInstant(dialect: Dialect, date: Date | null): string | Date | null {
  return date === null ? null : writeInstant(dialect, date);
}

/** A boolean as the dialect's column takes it. */
export function writeBoolean(dialect: Dialect, value: boolean): boolean | number {
  return dialect === 'sqlite' ? (value ? 1 : 0) : value;
}

/** A JSON column's text. */
export function writeJson(value: unknown): string {
  return JSON.stringify(value);
}
