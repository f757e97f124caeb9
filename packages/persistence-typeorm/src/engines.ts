import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DataSource, MigrationExecutor, type EntityManager, type Logger as OrmLogger } from 'typeorm';
import type { Dialect } from './dialect';
import type { DatabaseLogger } from './logger';
import { MIGRATIONS_TABLE, migrationsFor } from './migrations';
import { Mutex } from './mutex';
import { reportingClient } from './pg-client';
import { allSchemas, buildSchemas, type Schemas } from './schema';
import type { Engine } from './session';
import { ManagerRunner, PostgresPoolRunner, SLOW_STATEMENT_MS, SqliteConnectionRunner, type SqlRunner, type Statement } from './sql';

/** An engine with the life cycle the database facade drives. */
export interface ManagedEngine extends Engine {
  /** Applies pending migrations; returns the names of those it applied. */
  migrate(): Promise<string[]>;
  /** Runs a trivial query. */
  ping(): Promise<void>;
  /** The connections now, for metrics. */
  poolStats(): PoolStats;
  close(): Promise<void>;
}

/** The connections of an engine at one moment. */
export interface PoolStats {
  /** Connections the engine may open. */
  max: number;
  /** Connections open now. */
  open: number;
  /** Open connections not running anything. */
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

// Queries slower than this are reported to the logger, TypeORM's and hand-written alike.
const SLOW_QUERY_MS = SLOW_STATEMENT_MS;

/** SQL that brackets a migration run, e.g. to take and release a lock. */
interface MigrationGuard {
  before: string;
  after: string;
}

async function applyMigrations(dataSource: DataSource, guard?: MigrationGuard): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  try {
    if (guard) await runner.query(guard.before);
    try {
      const executor = new MigrationExecutor(dataSource, runner);
      // All pending migrations commit together or not at all.
      executor.transaction = 'all';
      const applied = await executor.executePendingMigrations();
      return applied.map((migration) => migration.name);
    } finally {
      if (guard) await runner.query(guard.after);
    }
  } finally {
    await runner.release();
  }
}

/** Options of the SQLite engine. */
export interface SqliteEngineOptions {
  file: string;
  busyTimeoutMs: number;
  ormLogger: OrmLogger;
}

interface WriterClaim {
  active: boolean;
}

/**
 * SQLite through better-sqlite3. TypeORM drives it over a single connection, so writing
 * transactions are serialised with a mutex (two interleaved `transaction()` calls would
 * otherwise share one database transaction). Reads outside a transaction go to a second,
 * read-only connection; in WAL mode it sees committed data only and never waits for the
 * writer.
 */
export class SqliteEngine implements ManagedEngine {
  readonly dialect: Dialect = 'sqlite';
  private readonly mutex = new Mutex();
  private readonly claims = new AsyncLocalStorage<WriterClaim>();
  readonly readerSql: SqlRunner;

  private constructor(
    readonly schemas: Schemas,
    private readonly writer: DataSource,
    private readonly readerSource: DataSource,
    ormLogger: OrmLogger,
  ) {
    this.readerSql = SqliteConnectionRunner.of(readerSource, (ms, query) => ormLogger.logQuerySlow(ms, query));
  }

  /** Opens (and creates, when missing) the database file and its two connections. */
  static async open(options: SqliteEngineOptions): Promise<SqliteEngine> {
    await mkdir(dirname(options.file), { recursive: true });
    const schemas = buildSchemas('sqlite');
    const common = {
      type: 'better-sqlite3' as const,
      database: options.file,
      entities: allSchemas(schemas),
      // better-sqlite3's `timeout` is SQLite's busy_timeout.
      timeout: options.busyTimeoutMs,
      logger: options.ormLogger,
      maxQueryExecutionTime: SLOW_QUERY_MS,
      synchronize: false,
      migrationsRun: false,
    };
    const writer = new DataSource({
      ...common,
      enableWAL: true,
      // An acknowledged change survives a power cut: every commit is synced to disk. (In WAL mode
      // SQLite's default, and better-sqlite3's build, is NORMAL, which may lose the last commits.)
      prepareDatabase: (db: { pragma(source: string): unknown }) => {
        db.pragma('synchronous = FULL');
      },
      migrations: migrationsFor('sqlite'),
      migrationsTableName: MIGRATIONS_TABLE,
    });
    await writer.initialize();
    // The writer has created the file and switched it to WAL; the reader opens it as is.
    const reader = new DataSource({ ...common, readonly: true, fileMustExist: true });
    try {
      await reader.initialize();
    } catch (error) {
      await writer.destroy();
      throw error;
    }
    return new SqliteEngine(schemas, writer, reader, options.ormLogger);
  }

  get reader(): EntityManager {
    return this.readerSource.manager;
  }

  inTransaction<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (this.claims.getStore()?.active === true) {
      // Waiting for the mutex that this very call chain holds would hang forever.
      return Promise.reject(
        new Error('A write was started inside a transaction on the same SQLite database; use the transaction\'s repositories'),
      );
    }
    return this.mutex.run(() => {
      const claim: WriterClaim = { active: true };
      const running = this.claims.run(claim, async () => {
        try {
          return await this.writer.transaction(statements);
        } finally {
          // Callbacks scheduled during the transaction may run later; they are outside it by then.
          claim.active = false;
        }
      });
      // While enabled, an AsyncLocalStorage makes every promise of the process pay for
      // tracking it (measured: about a tenth of a cached read). Only a transaction needs it,
      // and the mutex runs one at a time, so it is switched off between them.
      return running.finally(() => this.claims.disable());
    });
  }

  autonomousWrite<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.inTransaction(statements);
  }

  autonomousStatement(statement: Statement, params: readonly unknown[]): Promise<void> {
    // The writer connection is the mutex's: the statement waits for the transaction in progress.
    return this.inTransaction((manager) => new ManagerRunner('sqlite', manager).run(statement, params));
  }

  migrate(): Promise<string[]> {
    return this.mutex.run(() => applyMigrations(this.writer));
  }

  async ping(): Promise<void> {
    await this.readerSource.query('SELECT 1');
  }

  /** Two connections, a writer and a reader; callers queue for the writer, reads never wait. */
  poolStats(): PoolStats {
    const writing = this.mutex.held ? 1 : 0;
    return { max: 2, open: 2, idle: 2 - writing, waiting: this.mutex.waiting };
  }

  async close(): Promise<void> {
    await this.readerSource.destroy();
    // The writer closes last, once running transactions are done; closing the last
    // connection checkpoints the WAL into the database file.
    await this.mutex.run(() => this.writer.destroy());
  }
}

/** Options of the PostgreSQL engine. */
export interface PostgresEngineOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  connectRetries: number;
  ormLogger: OrmLogger;
  logger: DatabaseLogger;
  /** The location to name in log lines, without credentials. */
  location: string;
}

/** The counters of a pg Pool. */
interface PgPoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

// An arbitrary constant: every controller process takes the same advisory lock to migrate.
const MIGRATION_LOCK_KEY = 7_305_011_337;

/**
 * PostgreSQL through pg. Each transaction has a pooled connection of its own; `lockById`
 * takes a row lock (SELECT ... FOR UPDATE) and the unit of work retries on serialization
 * failures and deadlocks.
 */
export class PostgresEngine implements ManagedEngine {
  readonly dialect: Dialect = 'postgres';
  readonly readerSql: SqlRunner;

  private constructor(
    readonly schemas: Schemas,
    private readonly dataSource: DataSource,
    ormLogger: OrmLogger,
    private readonly poolSize: number,
  ) {
    this.readerSql = PostgresPoolRunner.of(dataSource, (ms, query) => ormLogger.logQuerySlow(ms, query));
  }

  /** Connects, retrying with back-off while the server is not reachable yet. */
  static async open(options: PostgresEngineOptions): Promise<PostgresEngine> {
    const schemas = buildSchemas('postgres');
    for (let attempt = 0; ; attempt += 1) {
      const dataSource = new DataSource({
        type: 'postgres',
        url: options.url,
        entities: allSchemas(schemas),
        poolSize: options.poolSize,
        applicationName: 'svc-controller',
        connectTimeoutMS: 10_000,
        extra: {
          // Every pooled connection reports its errors (pg-client.ts) ...
          Client: reportingClient(options.logger),
          // ... and a runaway statement of one cannot hold locks forever.
          ...(options.statementTimeoutMs > 0 ? { statement_timeout: options.statementTimeoutMs } : {}),
        },
        logger: options.ormLogger,
        maxQueryExecutionTime: SLOW_QUERY_MS,
        migrations: migrationsFor('postgres'),
        migrationsTableName: MIGRATIONS_TABLE,
        synchronize: false,
        migrationsRun: false,
      });
      try {
        await dataSource.initialize();
        return new PostgresEngine(schemas, dataSource, options.ormLogger, options.poolSize);
      } catch (error) {
        if (attempt >= options.connectRetries) throw error;
        const delayMs = Math.min(500 * 2 ** attempt, 10_000);
        options.logger.warn(
          `Cannot connect to ${options.location} (${error instanceof Error ? error.message : String(error)}); ` +
            `retrying in ${delayMs} ms (${attempt + 1}/${options.connectRetries})`,
        );
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  get reader(): EntityManager {
    return this.dataSource.manager;
  }

  inTransaction<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(statements);
  }

  autonomousWrite<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    // Some writes take more than one statement (deleting a user and its login failures).
    return this.dataSource.transaction(statements);
  }

  autonomousStatement(statement: Statement, params: readonly unknown[]): Promise<void> {
    // Any pooled connection, in autocommit: one statement commits alone, atomically.
    return this.readerSql.run(statement, params);
  }

  migrate(): Promise<string[]> {
    // Several controllers may start at once; the advisory lock lets one migrate at a time.
    return applyMigrations(this.dataSource, {
      before: `SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`,
      after: `SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`,
    });
  }

  async ping(): Promise<void> {
    await this.dataSource.query('SELECT 1');
  }

  /** pg's pool: its size, open and idle connections, and queries waiting for one. */
  poolStats(): PoolStats {
    const pool = (this.dataSource.driver as unknown as { master?: PgPoolCounts }).master;
    if (pool === undefined) return { max: this.poolSize, open: 0, idle: 0, waiting: 0 };
    return { max: pool.options?.max ?? this.poolSize, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
  }

  async close(): Promise<void> {
    await this.dataSource.destroy();
  }
}
