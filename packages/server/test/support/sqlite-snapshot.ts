import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/** Every row of every table, as JSON text per table, for comparing before and after a request. */
export type DatabaseSnapshot = Record<string, string>;

/** Tables a snapshot leaves out by default: migration bookkeeping only. */
const ALWAYS_SKIPPED = ['schema_migrations', 'sqlite_sequence'];

/**
 * Reads a test server's SQLite file through a read-only connection of its own (the server
 * commits before it answers, so a read after the answer sees everything the request wrote).
 */
export class SqliteReader {
  private readonly db: BetterSqlite3.Database;

  constructor(dataDir: string) {
    this.db = new BetterSqlite3(join(dataDir, 'controller.sqlite'), { readonly: true, fileMustExist: true });
  }

  /** The names of the tables, sorted. */
  tables(): string[] {
    return (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>)
      .map((row) => row.name)
      .filter((name) => !ALWAYS_SKIPPED.includes(name));
  }

  /** Every row of a table, in storage order. */
  rows<T = Record<string, unknown>>(table: string): T[] {
    return this.db.prepare(`SELECT * FROM "${table.replace(/"/g, '""')}" ORDER BY rowid`).all() as T[];
  }

  /** All rows of all tables except `skip`. */
  snapshot(skip: readonly string[] = []): DatabaseSnapshot {
    const result: DatabaseSnapshot = {};
    for (const table of this.tables()) if (!skip.includes(table)) result[table] = JSON.stringify(this.rows(table));
    return result;
  }

  /** Closes the connection. */
  close(): void {
    this.db.close();
  }
}
