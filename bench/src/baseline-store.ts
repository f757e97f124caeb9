/* The bare baseline's two stores: the same statements as the controller's, on better-sqlite3 or pg. */
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Pool, type PoolClient } from 'pg';

export type Row = Record<string, unknown>;

/** Statements on one connection or one transaction; `?` placeholders, in order. */
export interface Queries {
  all(sql: string, params: unknown[]): Promise<Row[]>;
  run(sql: string, params: unknown[]): Promise<void>;
}

export interface Store extends Queries {
  dialect: 'sqlite' | 'postgres';
  /** Runs `work` in one write transaction. */
  transaction<T>(work: (tx: Queries) => Promise<T>): Promise<T>;
  /** An instant as the driver writes it. */
  instant(date: Date): unknown;
  /** A SELECT of one app row, locking it for the transaction where the database can. */
  lockSuffix: string;
  appendLog(app: string, time: Date, message: string): Promise<void>;
}

/** The controller's `YYYY-MM-DD HH:MM:SS.SSS` UTC text for SQLite `datetime` columns. */
const sqliteInstant = (date: Date): string => date.toISOString().replace('T', ' ').replace('Z', '');

export function sqliteStore(file: string, logDir: string): Store {
  const writer = new Database(file, { timeout: 5000 });
  writer.pragma('foreign_keys = ON');
  writer.pragma('journal_mode = WAL');
  // Commits synced to disk, as the controller's writer does.
  writer.pragma('synchronous = FULL');
  const reader = new Database(file, { readonly: true, fileMustExist: true, timeout: 5000 });
  const cache = new Map<Database.Database, Map<string, Database.Statement>>([
    [writer, new Map()],
    [reader, new Map()],
  ]);
  const statement = (db: Database.Database, sql: string): Database.Statement => {
    const statements = cache.get(db) as Map<string, Database.Statement>;
    let prepared = statements.get(sql);
    if (prepared === undefined) {
      prepared = db.prepare(sql);
      statements.set(sql, prepared);
    }
    return prepared;
  };
  const on = (db: Database.Database): Queries => ({
    all: async (sql, params) => statement(db, sql).all(...params) as Row[],
    run: async (sql, params) => {
      statement(db, sql).run(...params);
    },
  });
  // One writer at a time, as the controller does: transactions interleave on one connection otherwise.
  let queue: Promise<unknown> = Promise.resolve();
  const logsReady = mkdir(logDir, { recursive: true });
  return {
    dialect: 'sqlite',
    ...on(reader),
    transaction<T>(work: (tx: Queries) => Promise<T>): Promise<T> {
      const run = queue.then(async () => {
        writer.exec('BEGIN');
        try {
          const result = await work(on(writer));
          writer.exec('COMMIT');
          return result;
        } catch (error) {
          writer.exec('ROLLBACK');
          throw error;
        }
      });
      queue = run.catch(() => undefined);
      return run;
    },
    instant: sqliteInstant,
    lockSuffix: '',
    async appendLog(app, time, message) {
      await logsReady;
      await appendFile(join(logDir, `${app}.log`), `${time.toISOString()}\tsvc[api]\t${message}\n`);
    },
  };
}

export function postgresStore(url: string, poolSize: number): Store {
  const pool = new Pool({ connectionString: url, max: poolSize });
  const numbered = new Map<string, string>();
  const toPg = (sql: string): string => {
    let text = numbered.get(sql);
    if (text === undefined) {
      let n = 0;
      text = sql.replace(/\?/g, () => `$${++n}`);
      numbered.set(sql, text);
    }
    return text;
  };
  const on = (client: Pool | PoolClient): Queries => ({
    all: async (sql, params) => (await client.query(toPg(sql), params)).rows as Row[],
    run: async (sql, params) => {
      await client.query(toPg(sql), params);
    },
  });
  const store: Store = {
    dialect: 'postgres',
    ...on(pool),
    async transaction<T>(work: (tx: Queries) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(on(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
    instant: (date) => date,
    lockSuffix: ' FOR UPDATE',
    async appendLog(app, time, message) {
      await store.run('INSERT INTO "log_entries" ("app", "time", "source", "message") VALUES (?, ?, ?, ?)', [app, time, 'svc[api]', message]);
    },
  };
  return store;
}

