import type { EntityManager } from 'typeorm';
import { guardAvailability } from './availability';
import type { Dialect } from './dialect';
import type { Schemas } from './schema';
import { ManagerRunner, type SqlRunner, type Statement } from './sql';

/** Where the statements of one set of repositories run: a transaction, or the database itself. */
export interface Session {
  readonly dialect: Dialect;
  readonly schemas: Schemas;
  /** True inside a transaction, where row locks last until it ends. */
  readonly transactional: boolean;
  /** Runs statements that only read. */
  read<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T>;
  /** The rows of one hand-written statement that only reads, run straight through the driver. */
  rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]>;
  /** Runs statements that write, atomically. */
  write<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T>;
  /**
   * Runs one hand-written statement that writes: inside a transaction as part of it,
   * otherwise committed on its own (a single statement is atomic by itself, so PostgreSQL
   * runs it with no BEGIN and COMMIT around it: one round trip instead of three).
   */
  writeOne(statement: Statement, params: readonly unknown[]): Promise<void>;
  /**
   * Runs a write that may violate a constraint, so that its failure does not spoil the
   * surrounding transaction: the caller may catch the error and go on.
   */
  guarded<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T>;
}

let savepoints = 0;

/** A session bound to one open transaction. */
export class TransactionSession implements Session {
  readonly transactional = true;
  private readonly sql: SqlRunner;

  constructor(
    readonly dialect: Dialect,
    readonly schemas: Schemas,
    private readonly manager: EntityManager,
  ) {
    this.sql = new ManagerRunner(dialect, manager);
  }

  read<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return guardAvailability(() => statements(this.manager));
  }

  rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    return guardAvailability(() => this.sql.rows<T>(statement, params));
  }

  write<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return guardAvailability(() => statements(this.manager));
  }

  writeOne(statement: Statement, params: readonly unknown[]): Promise<void> {
    return guardAvailability(() => this.sql.run(statement, params));
  }

  guarded<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return guardAvailability(async () => {
      // SQLite undoes only the failed statement; PostgreSQL aborts the whole transaction
      // unless the statement ran under a savepoint.
      if (this.dialect === 'sqlite') return statements(this.manager);
      savepoints += 1;
      const name = `svc_guard_${savepoints}`;
      await this.manager.query(`SAVEPOINT ${name}`);
      try {
        const result = await statements(this.manager);
        await this.manager.query(`RELEASE SAVEPOINT ${name}`);
        return result;
      } catch (error) {
        await this.manager.query(`ROLLBACK TO SAVEPOINT ${name}`);
        throw error;
      }
    });
  }
}

/** What a database engine offers to sessions outside any transaction. */
export interface Engine {
  readonly dialect: Dialect;
  readonly schemas: Schemas;
  /** A manager whose reads see committed data only. */
  readonly reader: EntityManager;
  /** Hand-written statements on the same connections as `reader`. */
  readonly readerSql: SqlRunner;
  /** Runs `statements` in one write transaction. */
  inTransaction<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T>;
  /** Runs writes outside any transaction of the caller, each atomic. */
  autonomousWrite<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T>;
  /** Runs one writing statement outside any transaction of the caller, committed on its own. */
  autonomousStatement(statement: Statement, params: readonly unknown[]): Promise<void>;
}

/**
 * A session outside any transaction: reads see committed data, each write commits at once.
 * A database that cannot be reached is reported as the core's Unavailable.
 */
export class AutonomousSession implements Session {
  readonly transactional = false;

  constructor(private readonly engine: Engine) {}

  get dialect(): Dialect {
    return this.engine.dialect;
  }

  get schemas(): Schemas {
    return this.engine.schemas;
  }

  read<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return guardAvailability(() => statements(this.engine.reader));
  }

  rows<T>(statement: Statement, params: readonly unknown[]): Promise<T[]> {
    return guardAvailability(() => this.engine.readerSql.rows<T>(statement, params));
  }

  write<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return guardAvailability(() => this.engine.autonomousWrite(statements));
  }

  writeOne(statement: Statement, params: readonly unknown[]): Promise<void> {
    return guardAvailability(() => this.engine.autonomousStatement(statement, params));
  }

  guarded<T>(statements: (manager: EntityManager) => Promise<T>): Promise<T> {
    return guardAvailability(() => this.engine.autonomousWrite(statements));
  }
}
