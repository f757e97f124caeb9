import type { LogEntry, LogStore } from '@svc/core';
import type { Dialect } from './dialect';
import type { Session } from './session';

/** Options of TypeOrmLogStore. */
export interface TypeOrmLogStoreOptions {
  /** Lines kept per app at least; older ones are deleted in batches. Default 50000. */
  maxEntriesPerApp?: number;
  /** Lines this process appends to one app between two prunes of it. Default a tenth of the cap. */
  pruneEvery?: number;
}

/** The default number of lines kept per app: five times the most one request may read. */
export const DEFAULT_MAX_LOG_ENTRIES_PER_APP = 50_000;

// Rows per INSERT: four parameters each stays well below both databases' parameter limits.
const INSERT_CHUNK = 500;

/** The statements that must walk the (app, id) index. */
interface LogStatements {
  tail: string;
  cutoff: string;
  prune: string;
  remove: string;
}

/*
 * SQLite's planner may prefer scanning the whole table backwards by rowid (the id) and
 * filtering on the app, which costs the size of the table instead of the lines wanted;
 * INDEXED BY holds it to the index. PostgreSQL's planner has per-app statistics.
 */
const STATEMENTS: Record<Dialect, LogStatements> = {
  sqlite: {
    tail: 'SELECT "time", "source", "message" FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ? ORDER BY "id" DESC LIMIT ?',
    cutoff: 'SELECT "id" FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ? ORDER BY "id" DESC LIMIT 1 OFFSET ?',
    prune: 'DELETE FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ? AND "id" <= ?',
    remove: 'DELETE FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ?',
  },
  postgres: {
    tail: 'SELECT "time", "source", "message" FROM "log_entries" WHERE "app" = $1 ORDER BY "id" DESC LIMIT $2',
    cutoff: 'SELECT "id" FROM "log_entries" WHERE "app" = $1 ORDER BY "id" DESC LIMIT 1 OFFSET $2',
    prune: 'DELETE FROM "log_entries" WHERE "app" = $1 AND "id" <= $2',
    remove: 'DELETE FROM "log_entries" WHERE "app" = $1',
  },
};

/**
 * LogStore in the `log_entries` table, so that every controller process sharing the
 * database reads the same logs. Lines of an app are ordered by their id; `tail` reads the
 * newest ones backwards along the (app, id) index, so its cost follows the lines asked
 * for, not the size of the log. An app keeps at least `maxEntriesPerApp` lines: after
 * every `pruneEvery` lines a process appends to an app, the older ones are deleted in one
 * statement, so between prunes an app may hold up to `pruneEvery` lines (per process) more.
 */
export class TypeOrmLogStore implements LogStore {
  private readonly maxEntries: number;
  private readonly pruneEvery: number;
  /** Lines appended per app since this process last pruned it. */
  private readonly sincePrune = new Map<string, number>();
  private readonly sql: LogStatements;

  constructor(
    private readonly session: Session,
    options: TypeOrmLogStoreOptions = {},
  ) {
    this.maxEntries = positive(options.maxEntriesPerApp ?? DEFAULT_MAX_LOG_ENTRIES_PER_APP, 'maxEntriesPerApp');
    this.pruneEvery = positive(options.pruneEvery ?? Math.max(1, Math.ceil(this.maxEntries / 10)), 'pruneEvery');
    this.sql = STATEMENTS[session.dialect];
  }

  /**
   * Appends the entries after the app's existing lines, all of them or none.
   * @throws Unavailable (DATABASE.UNAVAILABLE) when the database cannot be reached.
   */
  async append(app: string, entries: LogEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const rows = entries.map((entry) => ({
      app,
      time: new Date(entry.time.getTime()),
      source: entry.source,
      message: entry.message,
    }));
    await this.session.write(async (manager) => {
      for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
        await manager
          .createQueryBuilder()
          .insert()
          .into(this.session.schemas.logEntries)
          .values(rows.slice(start, start + INSERT_CHUNK))
          .updateEntity(false)
          .execute();
      }
    });
    const appended = (this.sincePrune.get(app) ?? 0) + entries.length;
    if (appended < this.pruneEvery) {
      this.sincePrune.set(app, appended);
      return;
    }
    this.sincePrune.delete(app);
    try {
      await this.prune(app);
    } catch {
      // The lines are stored; pruning is tried again with the next append.
      this.sincePrune.set(app, appended);
    }
  }

  /**
   * The last `lines` entries of the app, oldest first; none for an unknown app or a count below 1.
   * @throws Unavailable (DATABASE.UNAVAILABLE) when the database cannot be reached.
   */
  async tail(app: string, lines: number): Promise<LogEntry[]> {
    const count = Math.floor(lines);
    if (!(count > 0)) return [];
    const newestFirst = await this.session.read(async (manager) => {
      const rows = (await manager.query(this.sql.tail, [app, count])) as Array<{ time: unknown; source: string; message: string }>;
      const time = manager.connection.getMetadata(this.session.schemas.logEntries).findColumnWithPropertyName('time');
      if (time === undefined) throw new Error('The log entry schema has no time column');
      // The driver turns the stored instant into a new Date, as it does for entities.
      const toDate = (value: unknown): Date => manager.connection.driver.prepareHydratedValue(value, time) as Date;
      return rows.map((row): LogEntry => ({ time: toDate(row.time), source: row.source, message: row.message }));
    });
    return newestFirst.reverse();
  }

  /**
   * Deletes every line of the app; removing an app without lines is fine.
   * @throws Unavailable (DATABASE.UNAVAILABLE) when the database cannot be reached.
   */
  async remove(app: string): Promise<void> {
    this.sincePrune.delete(app);
    await this.session.write((manager) => manager.query(this.sql.remove, [app]));
  }

  /** Deletes the app's lines older than the newest `maxEntriesPerApp`. */
  private async prune(app: string): Promise<void> {
    await this.session.write(async (manager) => {
      // The newest line to delete: walking the (app, id) index backwards past the kept lines.
      const [cutoff] = (await manager.query(this.sql.cutoff, [app, this.maxEntries])) as Array<{ id: string | number }>;
      if (cutoff !== undefined) await manager.query(this.sql.prune, [app, cutoff.id]);
    });
  }
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}
