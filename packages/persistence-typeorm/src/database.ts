import { join } from 'node:path';
import type { BuildSlotStore, IdempotencyStore, LogStore, TlsStore, UnitOfWork } from '@svc/core';
import { TypeOrmIdempotencyStore } from './idempotency-store';
import { RUN_SLOTS, TypeOrmBuildSlotStore } from './build-slot-store';
import { DatabaseJournalSignal, type JournalSignalOptions } from './journal-signal';
import type { Dialect } from './dialect';
import { PostgresEngine, SqliteEngine, type ManagedEngine, type PoolStats } from './engines';
import { TypeOrmLogStore, type TypeOrmLogStoreOptions } from './log-store';
import { OrmLoggerAdapter, SILENT_LOGGER, type DatabaseLogger } from './logger';
import { AutonomousSession } from './session';
import { TypeOrmTlsStore } from './tls-store';
import { TypeOrmUnitOfWork, type RetryPolicy } from './unit-of-work';

/** How to reach the database. */
export interface DatabaseOptions {
  /** `postgres://` or `postgresql://` for PostgreSQL; absent for the embedded SQLite database. */
  url?: string;
  /** Where the SQLite file `controller.sqlite` lives; created when missing. */
  dataDir: string;
  /** PostgreSQL: connections in the pool. Default 10. */
  poolSize?: number;
  /** PostgreSQL: the server cancels a statement (lock waits included) that runs longer. Default 60000; 0 disables. */
  statementTimeoutMs?: number;
  /** PostgreSQL: how many times to retry the first connection, with back-off. Default 5. */
  connectRetries?: number;
  /** SQLite: how long a statement waits for a lock held by another connection. Default 5000. */
  busyTimeoutMs?: number;
  /** PostgreSQL: how long `ping` waits for an answer. Default 2000. */
  pingTimeoutMs?: number;
  /** Retries of transactions that lost a race. */
  retry?: Partial<RetryPolicy>;
  logger?: DatabaseLogger;
}

/** An open database: the unit of work over it and its life cycle. */
export interface Database {
  readonly dialect: Dialect;
  /** Where the data is, for log lines; never includes credentials. */
  readonly location: string;
  readonly uow: UnitOfWork;
  /** Brings the schema up to date; safe to call again and from several processes at once. */
  migrate(): Promise<void>;
  /** True when the database answers a trivial query in time, for readiness probes. */
  ping(): Promise<boolean>;
  /** The TLS state of automatic HTTPS in this database, shared by every process that uses it. */
  createTlsStore(): TlsStore;
  /** Requests made with an Idempotency-Key, shared by every process that uses this database. */
  createIdempotencyStore(): IdempotencyStore;
  /** The running builds' slots (`QUOTA_BUILDS_PER_USER`), shared by every process that uses this database. */
  createBuildSlotStore(): BuildSlotStore;
  /** The running one-off processes' slots (`QUOTA_RUNS_PER_USER`: runs and release phases), shared by every process that uses this database. */
  createRunSlotStore(): BuildSlotStore;
  /** Tells followers of the audit journal when any process that uses this database appended to it. */
  createJournalSignal(options?: Partial<JournalSignalOptions>): DatabaseJournalSignal;
  /** A LogStore in this database, shared by every process that uses it. */
  createLogStore(options?: TypeOrmLogStoreOptions): LogStore;
  /**
   * The secret stored under `name`; the first caller (of any process) stores `generate()`.
   * @throws Unavailable (DATABASE.UNAVAILABLE) when the database cannot be reached.
   */
  sharedSecret(name: string, generate: () => string): Promise<string>;
  /** The connections now (PostgreSQL: pg's pool; SQLite: its writer and reader connections). */
  poolStats(): PoolStats;
  /** How many containers are recorded in each state (states with none are left out). */
  containerCountsByState(): Promise<Record<string, number>>;
  /** The apps that have containers recorded (any state), sorted by name. */
  appsWithContainers(): Promise<string[]>;
  /** Waits for running transactions and closes every connection. */
  close(): Promise<void>;
}

/** The name of the SQLite file inside the data directory. */
export const SQLITE_FILE_NAME = 'controller.sqlite';

/** The URL without user name, password or query, fit for a log line. */
function describePostgresUrl(url: URL): string {
  return `postgresql://${url.host}${url.pathname}`;
}

function parsePostgresUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('The database URL is not a valid URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error(
      `Unsupported database URL scheme "${url.protocol}"; use postgres:// or postgresql://, or no URL for SQLite`,
    );
  }
  return url;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Opens the database: SQLite at `<dataDir>/controller.sqlite` when no URL is given,
 * PostgreSQL for a `postgres://` URL. Call `migrate()` before using the unit of work.
 * @throws Error when the URL is not a PostgreSQL URL or the database cannot be opened.
 */
export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  const logger = options.logger ?? SILENT_LOGGER;
  const ormLogger = new OrmLoggerAdapter(logger);
  let engine: ManagedEngine;
  let location: string;
  if (options.url === undefined || options.url === '') {
    const file = join(options.dataDir, SQLITE_FILE_NAME);
    location = `sqlite:${file}`;
    engine = await SqliteEngine.open({ file, busyTimeoutMs: options.busyTimeoutMs ?? 5000, ormLogger });
  } else {
    const url = parsePostgresUrl(options.url);
    location = describePostgresUrl(url);
    engine = await PostgresEngine.open({
      url: options.url,
      poolSize: options.poolSize ?? 10,
      statementTimeoutMs: options.statementTimeoutMs ?? 60_000,
      connectRetries: options.connectRetries ?? 5,
      ormLogger,
      logger,
      location,
    });
  }
  const uow = new TypeOrmUnitOfWork(engine, options.retry);
  const session = new AutonomousSession(engine);
  const pingTimeoutMs = options.pingTimeoutMs ?? 2000;
  let closing: Promise<void> | undefined;

  return {
    dialect: engine.dialect,
    location,
    uow,
    async migrate() {
      const applied = await engine.migrate();
      for (const name of applied) logger.info(`Applied database migration ${name} to ${location}`);
    },
    async ping() {
      if (closing !== undefined) return false;
      try {
        await withTimeout(engine.ping(), pingTimeoutMs);
        return true;
      } catch {
        return false;
      }
    },
    createTlsStore() {
      return new TypeOrmTlsStore(session);
    },
    createIdempotencyStore() {
      return new TypeOrmIdempotencyStore(session);
    },
    createBuildSlotStore() {
      return new TypeOrmBuildSlotStore(session);
    },
    createRunSlotStore() {
      return new TypeOrmBuildSlotStore(session, RUN_SLOTS);
    },
    createJournalSignal(signalOptions = {}) {
      const postgres = engine.dialect === 'postgres';
      return new DatabaseJournalSignal(session, {
        pollIntervalMs: signalOptions.pollIntervalMs ?? (postgres ? 2000 : 250),
        listenUrl: postgres ? options.url : undefined,
        ...(signalOptions.listenUrl === undefined ? {} : { listenUrl: signalOptions.listenUrl }),
      });
    },
    createLogStore(logStoreOptions) {
      return new TypeOrmLogStore(session, logStoreOptions);
    },
    async sharedSecret(name, generate) {
      const read = () => session.read((manager) => manager.findOneBy(engine.schemas.secrets, { name }));
      const existing = await read();
      if (existing !== null) return existing.value;
      // Processes starting together may race here: the first insert wins, the others read it.
      await session.write((manager) =>
        manager
          .createQueryBuilder()
          .insert()
          .into(engine.schemas.secrets)
          .values({ name, value: generate(), created: new Date() })
          .orIgnore()
          .updateEntity(false)
          .execute(),
      );
      const stored = await read();
      if (stored === null) throw new Error(`The secret ${name} could not be stored`);
      return stored.value;
    },
    poolStats() {
      return engine.poolStats();
    },
    async containerCountsByState() {
      const rows = await session.read((manager) =>
        manager
          .createQueryBuilder(engine.schemas.containers, 'c')
          .select('c.state', 'state')
          .addSelect('COUNT(*)', 'count')
          .groupBy('c.state')
          .getRawMany<{ state: string; count: string | number }>(),
      );
      return Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]));
    },
    async appsWithContainers() {
      const rows = await session.read((manager) =>
        manager.createQueryBuilder(engine.schemas.containers, 'c').select('c.app', 'app').distinct(true).orderBy('c.app').getRawMany<{ app: string }>(),
      );
      return rows.map((row) => row.app);
    },
    close() {
      closing ??= engine.close();
      return closing;
    },
  };
}
