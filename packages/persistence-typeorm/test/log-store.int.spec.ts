import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import { DomainError, type LogEntry } from '@svc/core';
import { describeLogStoreContract } from '@svc/core/testing';
import { createDatabase, SQLITE_FILE_NAME, TypeOrmLogStore, type Database } from '../src';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from './support/postgres';

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 123);

function lines(app: string, from: number, to: number): LogEntry[] {
  const result: LogEntry[] = [];
  for (let n = from; n <= to; n++) result.push({ time: new Date(T0 + n), source: `${app}[web.1]`, message: `line ${n}` });
  return result;
}

/** What the dialect-specific tests need to look at the table directly. */
interface Harness {
  /** A migrated database; every call before the test's end shares the same data. */
  database(): Promise<Database>;
  /** Another handle on the same data, as a second controller process would open it. */
  second(): Promise<Database | null>;
  count(app: string): Promise<number>;
  /** The plan of the query `tail` runs, as text. */
  planOfTail(app: string, n: number): Promise<string>;
  /** Bulk-loads `n` lines for `app` and refreshes the planner's statistics. */
  load(app: string, n: number): Promise<void>;
  /**
   * Inserts a line in a transaction left open until `commit` (its id is taken now, its row
   * becomes visible later); null where writes are serialised and this cannot happen.
   */
  insertUncommitted(app: string, message: string): Promise<{ commit(): Promise<void> } | null>;
}

async function eventually(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function describeTypeOrmLogStore(label: string, harness: () => Harness): void {
  describe(`TypeOrmLogStore on ${label}`, () => {
    it('keeps at least the newest maxEntriesPerApp lines, pruning in batches rather than on every append', async () => {
      const db = await harness().database();
      const store = db.createLogStore({ maxEntriesPerApp: 10, pruneEvery: 5 });

      for (let n = 1; n <= 30; n++) await store.append('myapp', lines('myapp', n, n));

      expect(await harness().count('myapp')).toBe(10);
      expect(await store.tail('myapp', 100)).toEqual(lines('myapp', 21, 30));
      for (let n = 31; n <= 34; n++) await store.append('myapp', lines('myapp', n, n));
      expect(await harness().count('myapp')).toBe(14);
      await store.append('myapp', lines('myapp', 35, 35));
      expect(await harness().count('myapp')).toBe(10);
    });

    it('prunes one app without touching another', async () => {
      const db = await harness().database();
      const store = db.createLogStore({ maxEntriesPerApp: 3, pruneEvery: 1 });
      await store.append('other-app', lines('other-app', 1, 5));

      await store.append('myapp', lines('myapp', 1, 8));

      expect(await harness().count('myapp')).toBe(3);
      expect(await store.tail('myapp', 10)).toEqual(lines('myapp', 6, 8));
      expect(await store.tail('other-app', 10)).toEqual(lines('other-app', 3, 5));
    });

    it('a line appended through one handle is read through another, in append order', async () => {
      const first = await harness().database();
      const second = (await harness().second()) ?? first;
      const writer = first.createLogStore();
      const reader = second.createLogStore();

      await writer.append('myapp', lines('myapp', 1, 2));
      await reader.append('myapp', lines('myapp', 3, 3));
      await writer.append('myapp', lines('myapp', 4, 4));

      expect(await reader.tail('myapp', 10)).toEqual(lines('myapp', 1, 4));
      expect(await writer.tail('myapp', 2)).toEqual(lines('myapp', 3, 4));
    });

    it('tail reads along an index instead of scanning or sorting the table, for a big and a small app', async () => {
      await harness().database();
      await harness().load('big-app', 20_000);
      await harness().load('small-app', 50);

      const small = await harness().planOfTail('small-app', 100);
      const big = await harness().planOfTail('big-app', 100);

      expect(small).toMatch(/ix_log_entries_app_id/);
      for (const plan of [small, big]) {
        expect(plan).toMatch(/index/i);
        expect(plan).not.toMatch(/TEMP B-TREE|Sort|Seq Scan|^SCAN/im);
      }
    });

    it('reports a closed database as Unavailable (DATABASE.UNAVAILABLE)', async () => {
      const db = await harness().database();
      const store = db.createLogStore();
      await db.close();

      const error = await store.tail('myapp', 1).then(() => null, (e: unknown) => e);

      expect(DomainError.is(error) && error.code).toBe('DATABASE.UNAVAILABLE');
    });

    it('a subscriber hears of lines another process appends, by polling, and stops hearing once unsubscribed', async () => {
      const first = await harness().database();
      const second = (await harness().second()) ?? first;
      const writer = first.createLogStore();
      const reader = second.createLogStore({ pollIntervalMs: 50 });
      await writer.append('myapp', lines('myapp', 1, 2));
      const received: LogEntry[] = [];

      const unsubscribe = reader.subscribe('myapp', (batch) => received.push(...batch));
      await reader.tail('myapp', 1);
      await writer.append('myapp', lines('myapp', 3, 4));
      await writer.append('other-app', lines('other-app', 1, 1));
      await eventually(() => received.length >= 2, 'the other process\'s lines arrived');
      unsubscribe();
      await writer.append('myapp', lines('myapp', 5, 5));
      await pause(250);

      expect(received).toEqual(lines('myapp', 3, 4));
    });

    it('a subscriber receives every line of a burst bigger than one poll reads, once and in order', async () => {
      const first = await harness().database();
      const second = (await harness().second()) ?? first;
      const writer = first.createLogStore();
      const reader = second.createLogStore({ pollIntervalMs: 20 });
      const received: LogEntry[] = [];
      const unsubscribe = reader.subscribe('myapp', (batch) => received.push(...batch));
      await reader.tail('myapp', 1);

      await writer.append('myapp', lines('myapp', 1, 2600));
      await eventually(() => received.length >= 2600, 'the whole burst arrived');
      await pause(100);
      unsubscribe();

      expect(received).toEqual(lines('myapp', 1, 2600));
    });

    it('a line whose transaction commits after a later line\'s is still delivered', async () => {
      const db = await harness().database();
      const store = db.createLogStore({ pollIntervalMs: 20 });
      const received: LogEntry[] = [];
      const unsubscribe = store.subscribe('myapp', (batch) => received.push(...batch));
      await store.tail('myapp', 1);
      const pending = await harness().insertUncommitted('myapp', 'slow commit');
      if (pending === null) {
        unsubscribe();
        return;
      }

      await store.append('myapp', lines('myapp', 1, 1));
      await eventually(() => received.length >= 1, 'the committed line arrived');
      await pause(100);
      await pending.commit();
      await eventually(() => received.length >= 2, 'the late line arrived');
      unsubscribe();

      expect(received.map((e) => e.message)).toEqual(['line 1', 'slow commit']);
    });

    it('refuses a cap, prune interval or poll interval that is not a positive integer', async () => {
      const db = await harness().database();

      expect(() => db.createLogStore({ maxEntriesPerApp: 0 })).toThrow(/maxEntriesPerApp/);
      expect(() => db.createLogStore({ pruneEvery: 1.5 })).toThrow(/pruneEvery/);
      expect(() => db.createLogStore({ pollIntervalMs: 0 })).toThrow(/pollIntervalMs/);
      expect(db.createLogStore()).toBeInstanceOf(TypeOrmLogStore);
    });

    it('stores one shared secret per name: the first value generated wins, later generators are not used', async () => {
      const db = await harness().database();
      const second = (await harness().second()) ?? db;

      const [a, b] = await Promise.all([db.sharedSecret('secret_key', () => 'first'), second.sharedSecret('secret_key', () => 'second')]);
      const later = await db.sharedSecret('secret_key', () => {
        throw new Error('must not be called');
      });

      expect(a).toBe(b);
      expect(['first', 'second']).toContain(a);
      expect(later).toBe(a);
      expect(await db.sharedSecret('another', () => 'other')).toBe('other');
    });
  });
}

describe('TypeOrmLogStore', () => {
  describe('on SQLite', () => {
    let root: string;
    let counter = 0;
    let dataDir = '';
    const opened: Database[] = [];

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'svc-logstore-'));
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((db) => db.close()));
      dataDir = '';
    });
    afterAll(async () => {
      await rm(root, { recursive: true, force: true });
    });

    async function fresh(): Promise<Database> {
      counter += 1;
      dataDir = join(root, `data-${counter}`);
      const db = await createDatabase({ dataDir });
      opened.push(db);
      await db.migrate();
      return db;
    }

    function raw<T>(use: (connection: BetterSqlite3.Database) => T): T {
      const connection = new BetterSqlite3(join(dataDir, SQLITE_FILE_NAME), { timeout: 5000 });
      try {
        return use(connection);
      } finally {
        connection.close();
      }
    }

    describeLogStoreContract('TypeOrmLogStore on SQLite', async () => {
      const db = await fresh();
      return { store: db.createLogStore(), close: async () => undefined };
    });

    describeTypeOrmLogStore('SQLite', () => ({
      database: () => (dataDir === '' ? fresh() : Promise.resolve(opened[0] as Database)),
      // One process owns a SQLite file: a second handle is the same database.
      second: async () => null,
      count: async (app) => raw((c) => c.prepare('SELECT count(*) FROM log_entries WHERE app = ?').pluck().get(app) as number),
      planOfTail: async (app, n) =>
        raw((c) =>
          (c.prepare('EXPLAIN QUERY PLAN SELECT "time", "source", "message" FROM "log_entries" INDEXED BY "ix_log_entries_app_id" WHERE "app" = ? ORDER BY "id" DESC LIMIT ?').all(app, n) as Array<{ detail: string }>)
            .map((row) => row.detail)
            .join('\n'),
        ),
      load: async (app, n) => {
        raw((c) => {
          const insert = c.prepare('INSERT INTO log_entries (app, time, source, message) VALUES (?, ?, ?, ?)');
          c.transaction(() => {
            for (let i = 0; i < n; i++) insert.run(app, '2026-11-21 10:00:00.000', 'svc[api]', `line ${i}`);
          })();
          c.exec('ANALYZE');
        });
      },
      insertUncommitted: async () => null,
    }));
  });

  if (TEST_DATABASE_URL === null) {
    if (process.env.CI === 'true') throw new Error('CI=true: TypeOrmLogStore on PostgreSQL needs TEST_DATABASE_URL (a PostgreSQL server)');
    process.stdout.write('TypeOrmLogStore on PostgreSQL was not tested: set TEST_DATABASE_URL to run it.\n');
    describe.skip('on PostgreSQL (skipped: TEST_DATABASE_URL is not set)', () => {
      it('runs the LogStore contract and the PostgreSQL-specific tests', () => undefined);
    });
  } else {
    const serverUrl = TEST_DATABASE_URL;
    describe('on PostgreSQL', () => {
      let scratch: ScratchDatabase;
      let admin: Client;
      let dataDir: string;
      const opened: Database[] = [];

      beforeAll(async () => {
        dataDir = await mkdtemp(join(tmpdir(), 'svc-logstore-pg-'));
        scratch = await createScratchDatabase(serverUrl, 'svc_logs');
        const db = await createDatabase({ url: scratch.url, dataDir });
        await db.migrate();
        await db.close();
        admin = new Client({ connectionString: scratch.url });
        await admin.connect();
      });
      beforeEach(async () => {
        await admin.query('TRUNCATE log_entries, controller_secrets RESTART IDENTITY');
      });
      afterEach(async () => {
        await Promise.all(opened.splice(0).map((db) => db.close()));
      });
      afterAll(async () => {
        await admin?.end();
        await scratch?.drop();
        await rm(dataDir, { recursive: true, force: true });
      });

      async function open(): Promise<Database> {
        const db = await createDatabase({ url: scratch.url, dataDir, poolSize: 4 });
        opened.push(db);
        return db;
      }

      describeLogStoreContract('TypeOrmLogStore on PostgreSQL', async () => {
        const db = await open();
        return { store: db.createLogStore(), close: async () => undefined };
      });

      describeTypeOrmLogStore('PostgreSQL', () => ({
        database: async () => opened[0] ?? open(),
        second: open,
        count: async (app) =>
          Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM log_entries WHERE app = $1', [app])).rows[0]?.n),
        planOfTail: async (app, n) =>
          (await admin.query<{ 'QUERY PLAN': string }>('EXPLAIN SELECT * FROM log_entries WHERE app = $1 ORDER BY id DESC LIMIT $2', [app, n])).rows
            .map((row) => row['QUERY PLAN'])
            .join('\n'),
        load: async (app, n) => {
          await admin.query(
            `INSERT INTO log_entries (app, time, source, message)
             SELECT $1, now(), 'svc[api]', 'line ' || i FROM generate_series(1, $2::int) AS i`,
            [app, n],
          );
          await admin.query('ANALYZE log_entries');
        },
        insertUncommitted: async (app, message) => {
          const client = new Client({ connectionString: scratch.url });
          await client.connect();
          await client.query('BEGIN');
          await client.query(`INSERT INTO log_entries (app, time, source, message) VALUES ($1, now(), 'svc[api]', $2)`, [app, message]);
          return {
            commit: async () => {
              await client.query('COMMIT');
              await client.end();
            },
          };
        },
      }));
    });
  }
});
