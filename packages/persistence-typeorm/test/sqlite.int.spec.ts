import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { QueryRunner } from 'typeorm';
import { AlreadyExists, type App, type Repositories } from '@svc/core';
import { describeRepositoryContracts } from '@svc/core/testing';
import { createDatabase, SQLITE_FILE_NAME, type Database } from '../src';
import { SqliteEngine } from '../src/engines';
import { ListCountsSqlite1763990000000 } from '../src/migrations/sqlite/1763990000000-list-counts';

const ALL = { offset: 0, limit: 100 };
const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 123);

async function seedUserAndApp(repos: Repositories, appId = 'myapp'): Promise<App> {
  await repos.users.create({
    username: 'alice',
    email: 'alice@example.com',
    firstName: '',
    lastName: '',
    passwordHash: 'x',
    isSuperuser: false,
    isStaff: false,
    isActive: true,
    lastLogin: null,
    dateJoined: new Date(T0),
  });
  const app: App = { uuid: `uuid-${appId}`, id: appId, owner: 'alice', structure: {}, created: new Date(T0), updated: new Date(T0) };
  await repos.apps.create(app);
  return app;
}

function release(app: string, version: number) {
  return {
    uuid: `${app}-release-${version}`,
    app,
    owner: 'alice',
    version,
    build: null,
    config: 'config',
    summary: `v${version}`,
    created: new Date(T0 + version),
    updated: new Date(T0 + version),
  };
}

/** A gate that one party opens and another waits on. */
function gate(): { open(): void; passed: Promise<void> } {
  let open!: () => void;
  const passed = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, passed };
}

describe('SQLite persistence', () => {
  let root: string;
  let opened = 0;
  const open: Database[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-sqlite-'));
  });

  afterAll(async () => {
    await Promise.all(open.map((db) => db.close()));
    await rm(root, { recursive: true, force: true });
  });

  /** A migrated database in a data directory of its own. */
  async function freshDatabase(options: Parameters<typeof createDatabase>[0] | object = {}): Promise<Database> {
    opened += 1;
    const db = await createDatabase({ dataDir: join(root, `data-${opened}`), ...options });
    open.push(db);
    await db.migrate();
    return db;
  }

  describeRepositoryContracts('SQLite', async () => {
    const db = await freshDatabase();
    return { uow: db.uow, close: () => db.close() };
  });

  describe('createDatabase without a URL', () => {
    it('creates the data directory and controller.sqlite in it, in WAL mode', async () => {
      const dataDir = join(root, 'nested', 'deeper');
      const db = await createDatabase({ dataDir });
      open.push(db);
      await db.migrate();

      const file = join(dataDir, SQLITE_FILE_NAME);
      expect(db.dialect).toBe('sqlite');
      expect(db.location).toBe(`sqlite:${file}`);
      expect(existsSync(file)).toBe(true);
      const raw = new BetterSqlite3(file, { readonly: true });
      try {
        expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      } finally {
        raw.close();
      }
    });

    it('syncs every commit to disk on the writer (synchronous=FULL): an acknowledged change survives a power cut', async () => {
      const engine = await SqliteEngine.open({ file: join(root, 'synced', SQLITE_FILE_NAME), busyTimeoutMs: 1000, ormLogger: { logQuery: () => undefined, logQueryError: () => undefined, logQuerySlow: () => undefined, logSchemaBuild: () => undefined, logMigration: () => undefined, log: () => undefined } });
      try {
        // 2 is FULL; WAL mode's default (and better-sqlite3's build) would say 1, NORMAL.
        const rows = (await engine.inTransaction((manager) => manager.query('PRAGMA synchronous'))) as Array<{ synchronous: number }>;
        expect(rows).toEqual([{ synchronous: 2 }]);
      } finally {
        await engine.close();
      }
    });

    it('creates every table and index the migrations define', async () => {
      const db = await freshDatabase();
      const raw = new BetterSqlite3(join(root, `data-${opened}`, SQLITE_FILE_NAME), { readonly: true });
      try {
        const names = (
          raw.prepare(`SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'`).all() as Array<{ name: string }>
        ).map((row) => row.name);
        expect(names.sort()).toEqual(
          [
            'acme_accounts',
            'acme_backoffs',
            'acme_challenges',
            'acme_pauses',
            'app_list_counts',
            'app_tls',
            'app_totals',
            'apps',
            'build_slots',
            'run_slots',
            'builds',
            'certificates',
            'configs',
            'containers',
            'controller_secrets',
            'deploys',
            'domains',
            'events',
            'idempotency_keys',
            'keys',
            'log_entries',
            'login_failures',
            'permissions',
            'releases',
            'schema_migrations',
            'tls_names',
            'tokens',
            'users',
            'visible_app_counts',
            'webhook_deliveries',
            'webhooks',
            'ix_acme_backoffs_next_attempt',
            'ix_apps_owner_id',
            'ix_build_slots_username',
            'ix_run_slots_username',
            'ix_builds_app_created',
            'ix_certificates_owner_common_name',
            'ix_configs_app',
            'ix_containers_app_created_type_num',
            'ix_containers_app_type_created_num',
            'ix_domains_app_domain',
            'ix_log_entries_app_id',
            'ix_login_failures_username_at',
            'ix_login_failures_address_at',
            'ix_permissions_username_app',
            'ix_tls_names_app',
            'ix_tokens_username',
            'ix_users_is_superuser_id',
            'ix_events_actor',
            'ix_events_app',
            'ix_events_app_uuid',
            'ix_events_created',
            'ix_idempotency_keys_created',
            'ix_webhook_deliveries_due',
            'ix_webhook_deliveries_pending',
            'ix_webhook_deliveries_webhook',
            'ix_webhooks_app',
          ].sort(),
        );
      } finally {
        raw.close();
      }
      expect(db.dialect).toBe('sqlite');
    });

    it('enforces foreign keys: an app of an unknown owner is refused', async () => {
      const db = await freshDatabase();

      const error = await db.uow.repositories.apps
        .create({ uuid: 'u', id: 'orphan', owner: 'nobody', structure: {}, created: new Date(T0), updated: new Date(T0) })
        .then(() => null, (e: unknown) => e);

      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(AlreadyExists);
      expect(await db.uow.repositories.apps.findById('orphan')).toBeNull();
    });

    it('refuses to delete a user who still owns apps', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);

      await expect(db.uow.repositories.users.delete('alice')).rejects.toThrow();
      expect(await db.uow.repositories.users.findByUsername('alice')).not.toBeNull();
    });

    it('stores instants as UTC text with milliseconds, which sorts in time order', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);
      const raw = new BetterSqlite3(join(root, `data-${opened}`, SQLITE_FILE_NAME), { readonly: true });
      try {
        expect(raw.prepare(`SELECT "created" FROM "apps"`).pluck().get()).toBe('2026-11-21 10:00:00.123');
      } finally {
        raw.close();
      }
    });

    it('lets a duplicate that the API does not report (a token hash) propagate as it is', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);
      const token = { hash: 'h', username: 'alice', created: new Date(T0), expires: null };
      await db.uow.repositories.tokens.add(token);

      const error = await db.uow.repositories.tokens.add(token).then(() => null, (e: unknown) => e);

      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(AlreadyExists);
    });
  });

  describe('migrations', () => {
    it('ListCounts counts the apps, collaborators, releases and builds already there when it is applied', async () => {
      const db = await freshDatabase();
      const repos = db.uow.repositories;
      await seedUserAndApp(repos, 'mine');
      await repos.users.create({
        username: 'bob',
        email: 'bob@example.com',
        firstName: '',
        lastName: '',
        passwordHash: 'x',
        isSuperuser: false,
        isStaff: false,
        isActive: true,
        lastLogin: null,
        dateJoined: new Date(T0),
      });
      await repos.apps.create({ uuid: 'uuid-theirs', id: 'theirs', owner: 'bob', structure: {}, created: new Date(T0), updated: new Date(T0) });
      const raw = new BetterSqlite3(join(root, `data-${opened}`, SQLITE_FILE_NAME));
      const runner = { query: async (sql: string) => raw.exec(sql) } as unknown as QueryRunner;
      const migration = new ListCountsSqlite1763990000000();
      try {
        await migration.down(runner);
        // Written while no trigger keeps count, as by the previous version of the controller.
        raw.exec(`INSERT INTO "permissions" ("app", "username") VALUES ('theirs', 'alice'), ('mine', 'alice')`);
        for (const version of [1, 2, 3]) await repos.releases.create(release('mine', version));

        await migration.up(runner);
      } finally {
        raw.close();
      }

      expect((await repos.apps.listVisibleTo('alice', ALL)).count).toBe(2);
      expect((await repos.apps.listVisibleTo('bob', ALL)).count).toBe(1);
      expect((await repos.apps.listVisibleTo(null, ALL)).count).toBe(2);
      expect((await repos.releases.listForApp('mine', ALL)).count).toBe(3);
      expect((await repos.releases.listForApp('theirs', ALL)).count).toBe(0);
    });

    it('are idempotent: migrating twice applies nothing the second time and keeps the data', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);

      await db.migrate();

      expect(await db.uow.repositories.apps.findById('myapp')).not.toBeNull();
      const raw = new BetterSqlite3(join(root, `data-${opened}`, SQLITE_FILE_NAME), { readonly: true });
      try {
        expect(raw.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all()).toEqual([
          'AcmeFairness1796200000033',
          'BuildSlots1795820400000',
          'BuildWorkdir1763884800000',
          'DeployLeases1764072000000',
          'Events1795734000000',
          'InitialSchema1763712000000',
          'JournalByApp1796300000036',
          'ListCounts1763990000000',
          'LoginFailureAddress1764000000010',
          'RunSlots1796400000037',
          'SharedState1763798400000',
          'TlsState1764200000000',
          'WebhookHealth1796500000034',
        ]);
      } finally {
        raw.close();
      }
    });
  });

  describe('durability', () => {
    it('keeps committed data across close and reopen', async () => {
      const dataDir = join(root, 'durable');
      const first = await createDatabase({ dataDir });
      await first.migrate();
      await first.uow.transaction(async (repos) => {
        await seedUserAndApp(repos);
        await repos.releases.create(release('myapp', 1));
      });
      await first.close();

      const second = await createDatabase({ dataDir });
      open.push(second);
      await second.migrate();

      expect((await second.uow.repositories.releases.latest('myapp'))?.summary).toBe('v1');
      expect((await second.uow.repositories.users.list(ALL)).count).toBe(1);
    });
  });

  describe('concurrency', () => {
    it('runs concurrent transactions one after the other: 20 read-then-insert works make versions 1..20', async () => {
      // One attempt only: the versions must come out right without any retry.
      const db = await freshDatabase({ retry: { maxAttempts: 1 } });
      await seedUserAndApp(db.uow.repositories);

      await Promise.all(
        Array.from({ length: 20 }, () =>
          db.uow.transaction(async (repos) => {
            const latest = await repos.releases.latest('myapp');
            // Yield to the event loop, where another transaction would slip in if it could.
            await new Promise((resolve) => setTimeout(resolve, 1));
            await repos.releases.create(release('myapp', (latest?.version ?? 0) + 1));
          }),
        ),
      );

      const versions = (await db.uow.repositories.releases.listForApp('myapp', ALL)).items.map((r) => r.version);
      expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
    });

    it('serves reads outside a transaction from committed data while a transaction is running', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);
      const deleted = gate();
      const finish = gate();

      const running = db.uow.transaction(async (repos) => {
        await repos.apps.delete('myapp');
        deleted.open();
        await finish.passed;
      });
      await deleted.passed;
      const seen = await db.uow.repositories.apps.findById('myapp');
      finish.open();
      await running;

      expect(seen?.id).toBe('myapp');
      expect(await db.uow.repositories.apps.findById('myapp')).toBeNull();
    });

    it('fails fast, instead of waiting for itself, on a write outside the transaction from inside it', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);

      const error = await db.uow
        .transaction(async () => {
          await db.uow.repositories.loginFailures.record('alice', new Date(T0));
        })
        .then(() => null, (e: unknown) => e);

      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/inside a transaction/);
      expect(await db.uow.repositories.loginFailures.since('alice', new Date(0))).toEqual([]);
    });

    it('lets callbacks that outlive a transaction write on their own afterwards', async () => {
      const db = await freshDatabase();
      await seedUserAndApp(db.uow.repositories);
      let later!: Promise<void>;

      await db.uow.transaction(async () => {
        later = new Promise<void>((resolve) => setTimeout(resolve, 5)).then(() =>
          db.uow.repositories.loginFailures.record('alice', new Date(T0)),
        );
      });
      await later;

      expect(await db.uow.repositories.loginFailures.since('alice', new Date(0))).toEqual([new Date(T0)]);
    });
  });

  describe('life cycle', () => {
    it('ping answers true while open and false once closed; close may be called twice', async () => {
      const db = await createDatabase({ dataDir: join(root, 'ping') });
      await db.migrate();

      expect(await db.ping()).toBe(true);
      await db.close();
      await db.close();
      expect(await db.ping()).toBe(false);
    });

    it('close waits for a running transaction to commit', async () => {
      const dataDir = join(root, 'closing');
      const db = await createDatabase({ dataDir });
      await db.migrate();
      const running = db.uow.transaction(async (repos) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        await seedUserAndApp(repos);
      });

      await db.close();
      await running;
      const reopened = await createDatabase({ dataDir });
      open.push(reopened);

      expect(await reopened.uow.repositories.apps.findById('myapp')).not.toBeNull();
    });

    it('rejects a URL that is not a PostgreSQL URL', async () => {
      await expect(createDatabase({ url: 'mysql://localhost/db', dataDir: root })).rejects.toThrow(
        /Unsupported database URL scheme "mysql:"/,
      );
    });
  });
});
