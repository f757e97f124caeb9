import { LogSubscribers, type LogEntry, type LogListener, type LogStore } from '@svc/core';
import type { EntityManager } from 'typeorm';
import type { Dialect } from './dialect';
import type { Session } from './session';
import { ManagerRunner, statement, writeInstant, type Statement } from './sql';

/** Options of TypeOrmLogStore. */
export interface TypeOrmLogStoreOptions {
  /** Lines kept per app at least; older ones are deleted in batches. Default 50000. */
  maxEntriesPerApp?: number;
  /** Lines this process appends to one app between two prunes of it. Default a tenth of the cap. */
  pruneEvery?: number;
  /** How often an app with subscribers is read for lines appended by any process. Default 1000 ms. */
  pollIntervalMs?: number;
}

/** The default number of lines kept per app: five times the most one request may read. */
export const DEFAULT_MAX_LOG_ENTRIES_PER_APP = 50_000;

// Rows per INSERT: four parameters each stays well below both databases' parameter limits.
const INSERT_CHUNK = 500;
/** `INSERT` statements of n lines, by n: an append of one line is the usual one. */
const insertStatements = new Map<number, Statement>();

function insertLines(count: number): Statement {
  let insert = insertStatements.get(count);
  if (insert === undefined) {
    insert = statement(`INSERT INTO "log_entries" ("app", "time", "source", "message") VALUES ${Array.from({ length: count }, () => '(?, ?, ?, ?)').join(', ')}`);
    // Only the small counts come back often; a long batch's statement is not worth keeping.
    if (count <= 16) insertStatements.set(count, insert);
  }
  return insert;
}

/** The parameters of one line, in `insertLines`' column order. */
function lineParams(dialect: Dialect, app: string, entry: LogEntry): unknown[] {
  return [app, writeInstant(dialect, entry.time), entry.source, entry.message];
}

/** The default interval of reading an app's new lines while it has subscribers. */
export const DEFAULT_LOG_POLL_INTERVAL_MS = 1000;
// New lines read per poll; a full batch is followed at once by the next poll.
const POLL_BATCH = 1000;
/*
 * PostgreSQL hands out ids before commit, so a line may become visible after one with a
 * higher id. Polls therefore read again from a floor that trails the delivered ids by this
 * long, and skip the ids they already delivered: a line whose transaction commits within
 * this time of taking its id is not missed.
 */
const SETTLE_MS = 3000;
// Delivered ids remembered above the floor, at most; beyond this the floor moves on early.
const MAX_RECENT_IDS = 20_000;

/** The statements that must walk the (app, id) index. */
interface LogStatements {
  tail: string;
  cutoff: string;
  prune: string;
  remove: string;
  newest: string;
  since: string;
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
    newest: 'SELECT "id" FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ? ORDER BY "id" DESC LIMIT 1',
    since: 'SELECT "id", "time", "source", "message" FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ? AND "id" > ? ORDER BY "id" ASC LIMIT ?',
  },
  postgres: {
    tail: 'SELECT "time", "source", "message" FROM "log_entries" WHERE "app" = $1 ORDER BY "id" DESC LIMIT $2',
    cutoff: 'SELECT "id" FROM "log_entries" WHERE "app" = $1 ORDER BY "id" DESC LIMIT 1 OFFSET $2',
    prune: 'DELETE FROM "log_entries" WHERE "app" = $1 AND "id" <= $2',
    remove: 'DELETE FROM "log_entries" WHERE "app" = $1',
    newest: 'SELECT "id" FROM "log_entries" WHERE "app" = $1 ORDER BY "id" DESC LIMIT 1',
    since: 'SELECT "id", "time", "source", "message" FROM "log_entries" WHERE "app" = $1 AND "id" > $2 ORDER BY "id" ASC LIMIT $3',
  },
};

/**
 * LogStore in the `log_entries` table, so that every controller process sharing the
 * database reads the same logs. Lines of an app are ordered by their id; `tail` reads the
 * newest ones backwards along the (app, id) index, so its cost follows the lines asked
 * for, not the size of the log. An app keeps at least `maxEntriesPerApp` lines: after
 * every `pruneEvery` lines a process appends to an app, the older ones are deleted in one
 * statement, so between prunes an app may hold up to `pruneEvery` lines (per process) more.
 *
 * Subscribers hear of the lines of every process sharing the database: while an app has
 * subscribers in this process, its new rows are read by id every `pollIntervalMs`, and at
 * once after this process appends to it.
 */
export class TypeOrmLogStore implements LogStore {
  private readonly maxEntries: number;
  private readonly pruneEvery: number;
  /** Lines appended per app since this process last pruned it. */
  private readonly sincePrune = new Map<string, number>();
  private readonly sql: LogStatements;
  private readonly pollIntervalMs: number;
  private readonly subscribers = new LogSubscribers();
  /** Apps with subscribers in this process, and where their polling stands. */
  private readonly followed = new Map<string, Follow>();

  constructor(
    private readonly session: Session,
    options: TypeOrmLogStoreOptions = {},
  ) {
    this.maxEntries = positive(options.maxEntriesPerApp ?? DEFAULT_MAX_LOG_ENTRIES_PER_APP, 'maxEntriesPerApp');
    this.pruneEvery = positive(options.pruneEvery ?? Math.max(1, Math.ceil(this.maxEntries / 10)), 'pruneEvery');
    this.sql = STATEMENTS[session.dialect];
    this.pollIntervalMs = positive(options.pollIntervalMs ?? DEFAULT_LOG_POLL_INTERVAL_MS, 'pollIntervalMs');
  }

  /**
   * Appends the entries after the app's existing lines, all of them or none.
   * @throws Unavailable (DATABASE.UNAVAILABLE) when the database cannot be reached.
   */
  async append(app: string, entries: LogEntry[]): Promise<void> {
    if (entries.length === 0) return;
    // A subscription's first read fixes the newest line it does not deliver: lines appended
    // here after subscribing wait for it, so they land past that line and are delivered.
    await this.followed.get(app)?.ready;
    const { dialect } = this.session;
    if (entries.length <= INSERT_CHUNK) {
      // The usual append (a controller event, a batch of output): one statement, atomic alone.
      await this.session.writeOne(insertLines(entries.length), entries.flatMap((entry) => lineParams(dialect, app, entry)));
    } else {
      await this.session.write(async (manager) => {
        const runner = new ManagerRunner(dialect, manager);
        for (let start = 0; start < entries.length; start += INSERT_CHUNK) {
          const chunk = entries.slice(start, start + INSERT_CHUNK);
          await runner.run(insertLines(chunk.length), chunk.flatMap((entry) => lineParams(dialect, app, entry)));
        }
      });
    }
    this.wake(app);
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
    // After a subscription's first read, so that tail and subscription leave no gap between them.
    await this.followed.get(app)?.ready;
    const newestFirst = await this.session.read(async (manager) => {
      const rows = (await manager.query(this.sql.tail, [app, count])) as Array<{ time: unknown; source: string; message: string }>;
      const toDate = dateReader(manager, this.session);
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

  /**
   * Calls `listener` with the lines appended to the app by any process sharing the database,
   * in id order, until the returned function is called. Lines are read about every
   * `pollIntervalMs` (at once after an append through this store). The first read, started
   * here, fixes the newest line that is not delivered; appends and tails of the app through
   * this store wait for it. A failed read is tried again at the next tick.
   */
  subscribe(app: string, listener: LogListener): () => void {
    const unsubscribe = this.subscribers.add(app, listener);
    if (!this.followed.has(app)) {
      const follow: Follow = { floor: null, recent: new Map(), timer: null, polling: false, again: false, stopped: false, ready: Promise.resolve() };
      this.followed.set(app, follow);
      follow.ready = this.poll(app, follow);
    }
    return () => {
      unsubscribe();
      const follow = this.followed.get(app);
      if (follow === undefined || this.subscribers.count(app) > 0) return;
      follow.stopped = true;
      if (follow.timer !== null) clearTimeout(follow.timer);
      this.followed.delete(app);
    };
  }

  /** Polls a followed app now instead of at its next tick. */
  private wake(app: string): void {
    const follow = this.followed.get(app);
    if (follow === undefined) return;
    if (follow.polling) {
      follow.again = true;
      return;
    }
    if (follow.timer !== null) clearTimeout(follow.timer);
    follow.timer = null;
    void this.poll(app, follow);
  }

  /** Reads the app's lines past the floor, delivers the new ones and schedules the next read. */
  private async poll(app: string, follow: Follow): Promise<void> {
    follow.polling = true;
    let more = false;
    try {
      if (follow.floor === null) {
        follow.floor = await this.newestId(app);
      } else {
        const limit = POLL_BATCH + follow.recent.size;
        const rows = await this.readSince(app, follow.floor, limit);
        if (follow.stopped) return;
        const now = Date.now();
        const fresh = rows.filter((row) => !follow.recent.has(row.id));
        for (const row of fresh) follow.recent.set(row.id, now);
        settle(follow, now);
        this.subscribers.notify(app, fresh.map((row) => row.entry));
        more = rows.length === limit;
      }
    } catch {
      // The database may be away for a moment: the next tick reads from the same floor.
    } finally {
      follow.polling = false;
      if (!follow.stopped) {
        const delay = more || follow.again ? 0 : this.pollIntervalMs;
        follow.again = false;
        follow.timer = setTimeout(() => {
          follow.timer = null;
          void this.poll(app, follow);
        }, delay);
        // A follower alone must not keep the process alive.
        follow.timer.unref();
      }
    }
  }

  private async newestId(app: string): Promise<number> {
    const [row] = await this.session.read((manager) => manager.query(this.sql.newest, [app]) as Promise<Array<{ id: string | number }>>);
    return row === undefined ? 0 : Number(row.id);
  }

  private async readSince(app: string, floor: number, limit: number): Promise<Array<{ id: number; entry: LogEntry }>> {
    return this.session.read(async (manager) => {
      const rows = (await manager.query(this.sql.since, [app, floor, limit])) as Array<{ id: string | number; time: unknown; source: string; message: string }>;
      const toDate = dateReader(manager, this.session);
      return rows.map((row) => ({ id: Number(row.id), entry: { time: toDate(row.time), source: row.source, message: row.message } }));
    });
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

/** Where the polling of one followed app stands. */
interface Follow {
  /** Every line at or below this id was delivered or predates the subscription; null until first read. */
  floor: number | null;
  /** Ids above the floor already delivered, with when they were read. */
  recent: Map<number, number>;
  timer: ReturnType<typeof setTimeout> | null;
  polling: boolean;
  /** An append arrived during a poll: poll again right after it. */
  again: boolean;
  stopped: boolean;
  /** Settles when the first read has fixed the floor (or failed); never rejects. */
  ready: Promise<void>;
}

/** Moves the floor past the delivered ids read at least SETTLE_MS ago (or the oldest, when too many are kept). */
function settle(follow: Follow, now: number): void {
  let floor = follow.floor ?? 0;
  const overflow = follow.recent.size - MAX_RECENT_IDS;
  const ids = [...follow.recent.keys()].sort((a, b) => a - b);
  ids.forEach((id, index) => {
    if (index < overflow || now - (follow.recent.get(id) ?? now) >= SETTLE_MS) floor = Math.max(floor, id);
  });
  for (const id of ids) if (id <= floor) follow.recent.delete(id);
  follow.floor = floor;
}

/** Turns a stored instant into a new Date, as the driver does for entities. */
function dateReader(manager: EntityManager, session: Session): (value: unknown) => Date {
  const time = manager.connection.getMetadata(session.schemas.logEntries).findColumnWithPropertyName('time');
  if (time === undefined) throw new Error('The log entry schema has no time column');
  return (value) => manager.connection.driver.prepareHydratedValue(value, time) as Date;
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}
