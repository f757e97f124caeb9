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

function failed(text: string, params: readonly unknown[], error: unknown): QueryFailedError {
  // Not `instanceof Error`: errors made in another realm (Node's own, under a test runner's
  // sandbox) would fail it and lose their code.
  const driverError = typeof error === 'object' && error !== null ? (error as Error) : new Error(String(error));
  return new QueryFailedError(text, [...params], driverError);
}

/** Statements on a better-sqlite3 connection, each prepared once and kept. */
export class SqliteConnectionRunner implements SqlRunner {
  private readonly prepared = new Map<string, BetterSqlite3.Statement>();

  constructor(private readonly db: BetterSqlite3.Database) {}

  /** The connection TypeORM opened for `dataSource`. */
  static of(dataSource: DataSource): SqliteConnectionRunner {
    return new SqliteConnectionRunner((dataSource.driver as unknown as { databaseConnection: BetterSqlite3.Database }).databaseConnection);
  }

  private prepare(text: string): BetterSqlite3.Statement {
    let prepared = this.prepared.get(text);
    if (prepared === undefined) {
      prepared = this.db.prepare(text);
      this.prepared.set(text, prepared);
    }
    return prepared;
  }

  async rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    try {
      return this.prepare(statement.sqlite).all(...params) as T[];
    } catch (error) {
      throw failed(statement.sqlite, params, error);
    }
  }

  async run(statement: Statement, params: readonly unknown[]): Promise<void> {
    try {
      this.prepare(statement.sqlite).run(...params);
    } catch (error) {
      throw failed(statement.sqlite, params, error);
    }
  }
}

/** Statements on pooled PostgreSQL connections, one connection per statement. */
export class PostgresPoolRunner implements SqlRunner {
  constructor(private readonly pool: Pool) {}

  /** The pool TypeORM opened for `dataSource`. */
  static of(dataSource: DataSource): PostgresPoolRunner {
    return new PostgresPoolRunner((dataSource.driver as unknown as { master: Pool }).master);
  }

  async rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    try {
      return (await this.pool.query(statement.postgres, params as unknown[])).rows as T[];
    } catch (error) {
      throw failed(statement.postgres, params, error);
    }
  }

  async run(statement: Statement, params: readonly unknown[]): Promise<void> {
    await this.rows(statement, params);
  }
}

/** Statements inside a transaction (or another unit) that TypeORM runs for `manager`. */
export class ManagerRunner implements SqlRunner {
  constructor(
    private readonly dialect: Dialect,
    private readonly manager: EntityManager,
  ) {}

  async rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    const text = statement[this.dialect];
    const runner = this.manager.queryRunner;
    if (runner === undefined) return (await this.manager.query(text, [...params])) as T[];
    const result = await runner.query(text, [...params], true);
    return (result.records ?? []) as T[];
  }

  async run(statement: Statement, params: readonly unknown[]): Promise<void> {
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
  if (typeof value === 'string') return new Date(`${value.replace(' ', 'T')}Z`);
  return new Date(Number(value));
}

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
