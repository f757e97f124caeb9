import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { createDatabase, SQLITE_FILE_NAME, type Database } from '../src';
import type { Dialect } from '../src/dialect';
import { JournalByAppPostgres1796300000036 } from '../src/migrations/postgres/1796300000036-journal-by-app';
import { JournalByAppSqlite1796300000036 } from '../src/migrations/sqlite/1796300000036-journal-by-app';
import { writeInstant } from '../src/sql';
import { createScratchDatabase, TEST_DATABASE_URL } from './support/postgres';

const ALL = { offset: 0, limit: 100 };
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0, 0);

/** A database of one driver, with a raw connection for what the previous version wrote. */
interface Opened {
  dialect: Dialect;
  db: Database;
  another(): Promise<Database>;
  /** Runs SQL on a raw connection, `?` or `$n` placeholders as the driver wants. */
  raw(sql: string, params?: unknown[]): Promise<void>;
  migration: MigrationInterface;
  done(): Promise<void>;
}

function describeJournalByApp(name: string, open: () => Promise<Opened>): void {
  describe(`the journal keyed by app uuid on ${name}`, () => {
    let opened: Opened;

    beforeAll(async () => {
      opened = await open();
      await opened.db.migrate();
      const repos = opened.db.uow.repositories;
      for (const username of ['alice', 'mallory']) {
        await repos.users.create({
          username, email: `${username}@example.com`, firstName: '', lastName: '', passwordHash: 'x', isSuperuser: false,
          isStaff: false, isActive: true, lastLogin: null, dateJoined: new Date(T0),
        });
      }
    });
    afterAll(async () => opened.done());

    it('migrating gives events the uuid of the app that had their name then; events of deleted apps keep none', async () => {
      const { db, dialect, raw, migration } = opened;
      const repos = db.uow.repositories;
      const runner = { query: (sql: string) => raw(sql) } as unknown as QueryRunner;
      const store = db.createIdempotencyStore();
      await migration.down(runner);
      // Written by the previous version: alice's "shop" (deleted since), then mallory's "shop" made under the name.
      const insert = async (uuid: string, at: number, app: string | null, actor: string): Promise<void> => {
        const sql = dialect === 'postgres'
          ? 'INSERT INTO "events" ("uuid", "created", "actor", "action", "app", "target", "summary", "request_id", "address") VALUES ($1, $2, $3, $4, $5, \'\', \'s\', \'\', \'\')'
          : 'INSERT INTO "events" ("uuid", "created", "actor", "action", "app", "target", "summary", "request_id", "address") VALUES (?, ?, ?, ?, ?, \'\', \'s\', \'\', \'\')';
        await raw(sql, [uuid, writeInstant(dialect, new Date(at)), actor, app === null ? 'key.create' : 'config.update', app]);
      };
      await insert('old-shop', T0, 'shop', 'alice');
      await insert('gone-app', T0 + 1000, 'gone', 'alice');
      await insert('account', T0 + 2000, null, 'mallory');
      await repos.apps.create({ uuid: 'uuid-new-shop', id: 'shop', owner: 'mallory', structure: {}, created: new Date(T0 + 10_000), updated: new Date(T0 + 10_000) });
      await insert('new-shop-create', T0 + 10_000, 'shop', 'mallory');
      await insert('new-shop', T0 + 20_000, 'shop', 'mallory');
      // One answer kept in clear (a token), one request still running.
      expect(await store.begin({ username: 'alice', key: 'done', fingerprint: 'f', response: null, created: new Date(T0) })).toBeNull();
      await store.finish('alice', 'done', { status: 201, headers: {}, body: '{"token":"in clear"}' });
      expect(await store.begin({ username: 'alice', key: 'running', fingerprint: 'f', response: null, created: new Date(T0) })).toBeNull();

      await migration.up(runner);

      const byUuid = new Map((await repos.events.list({}, ALL)).items.map((e) => [e.uuid, e.appUuid]));
      expect(Object.fromEntries(byUuid)).toMatchObject({
        'old-shop': null, 'gone-app': null, account: null, 'new-shop-create': 'uuid-new-shop', 'new-shop': 'uuid-new-shop',
      });
      expect((await repos.events.list({ visibleTo: 'mallory' }, ALL)).items.map((e) => e.uuid)).toEqual(['new-shop', 'new-shop-create', 'account']);
      expect((await repos.events.list({ visibleTo: 'alice' }, ALL)).items).toEqual([]);
      expect((await repos.events.list({ appUuid: 'uuid-new-shop' }, ALL)).count).toBe(2);
      // An administrator's list by name still holds the deleted app's events.
      expect((await repos.events.list({ app: 'shop' }, ALL)).items.map((e) => e.uuid)).toEqual(['new-shop', 'new-shop-create', 'old-shop']);
      expect(await repos.events.newest('uuid-new-shop')).toBe('new-shop');
      expect((await repos.events.after('uuid-new-shop', 'old-shop', 10)).map((e) => e.uuid)).toEqual(['new-shop-create', 'new-shop']);
      // The answer kept in clear is gone; the running request is still there.
      expect(await store.begin({ username: 'alice', key: 'done', fingerprint: 'f', response: null, created: new Date(T0) })).toBeNull();
      expect(await store.begin({ username: 'alice', key: 'running', fingerprint: 'f', response: null, created: new Date(T0) })).toMatchObject({ response: null });
    });

    it('appends and reads by app uuid: an app created again under a name reads none of the old app\'s events', async () => {
      const repos = opened.db.uow.repositories;
      const base = { created: new Date(T0 + 60_000), actor: 'mallory', action: 'scale.update', target: '', summary: 's', requestId: '', address: '' };
      await repos.events.append({ ...base, uuid: 'fresh-1', app: 'shop', appUuid: 'uuid-new-shop' });
      await repos.events.append({ ...base, uuid: 'fresh-other', app: 'shop', appUuid: 'uuid-of-a-deleted-shop' });
      expect((await repos.events.list({ appUuid: 'uuid-new-shop', action: 'scale' }, ALL)).items.map((e) => e.uuid)).toEqual(['fresh-1']);
      expect((await repos.events.list({ visibleTo: 'mallory', action: 'scale' }, ALL)).items.map((e) => e.uuid)).toEqual(['fresh-1']);
      expect((await repos.events.list({ app: 'shop', action: 'scale' }, ALL)).count).toBe(2);
    });

    it('counts failed logins per address exactly when they are recorded at once from two handles', async () => {
      const other = await opened.another();
      const handles = [opened.db, other];
      const since = new Date(T0);
      const counts = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (handles[i % 2] as Database).uow.transaction((tx) => tx.loginFailures.recordCounting(i % 3 === 0 ? 'nobody' : 'alice', new Date(T0 + 1000), '198.51.100.7', since)),
        ),
      );
      expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
      expect(await opened.db.uow.repositories.loginFailures.recordCounting('alice', new Date(T0 + 2000), '198.51.100.8', since)).toBe(1);
      expect(await opened.db.uow.repositories.loginFailures.recordCounting('alice', new Date(T0 + 2000), '198.51.100.7', new Date(T0 + 1500))).toBe(1);
    });
  });
}

describeJournalByApp('SQLite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-journal-by-app-'));
  const db = await createDatabase({ dataDir: dir });
  const connection = new BetterSqlite3(join(dir, SQLITE_FILE_NAME));
  return {
    dialect: 'sqlite',
    db,
    another: async () => db,
    raw: async (sql, params = []) => {
      if (params.length === 0) connection.exec(sql);
      else connection.prepare(sql).run(...params);
    },
    migration: new JournalByAppSqlite1796300000036(),
    done: async () => {
      connection.close();
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

if (TEST_DATABASE_URL === null) process.stdout.write('The journal keyed by app uuid on PostgreSQL was not tested: set TEST_DATABASE_URL to run it.\n');

(TEST_DATABASE_URL === null ? describe.skip : describe)(TEST_DATABASE_URL === null ? 'PostgreSQL (skipped: TEST_DATABASE_URL is not set)' : 'PostgreSQL', () => {
  describeJournalByApp('PostgreSQL', async () => {
    const scratch = await createScratchDatabase(TEST_DATABASE_URL as string, 'svc_journal_app');
    const dir = await mkdtemp(join(tmpdir(), 'svc-journal-by-app-pg-'));
    const handles: Database[] = [];
    const make = async (): Promise<Database> => {
      const db = await createDatabase({ url: scratch.url, dataDir: dir });
      handles.push(db);
      return db;
    };
    const client = new Client({ connectionString: scratch.url });
    await client.connect();
    return {
      dialect: 'postgres',
      db: await make(),
      another: make,
      raw: async (sql, params = []) => {
        await client.query(sql, params);
      },
      migration: new JournalByAppPostgres1796300000036(),
      done: async () => {
        await client.end();
        for (const db of handles) await db.close();
        await scratch.drop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
});
