import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { App, Release, Repositories } from '@svc/core';
import { describeRepositoryContracts } from '@svc/core/testing';
import type { QueryRunner } from 'typeorm';
import { createDatabase, type Database, type DatabaseOptions } from '../src';
import { ListCountsPostgres1763990000000 } from '../src/migrations/postgres/1763990000000-list-counts';
import { migrationsFor } from '../src/migrations';

const baseUrl = process.env.TEST_DATABASE_URL;
const ALL = { offset: 0, limit: 100 };
const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 123);
const TABLES = [
  'users',
  'tokens',
  'login_failures',
  'apps',
  'configs',
  'builds',
  'releases',
  'containers',
  'domains',
  'keys',
  'permissions',
  'certificates',
  'log_entries',
  'controller_secrets',
  'visible_app_counts',
  'app_totals',
  'app_list_counts',
  'deploys',
  'tls_names',
  'acme_challenges',
  'acme_accounts',
  'acme_backoffs',
  'acme_pauses',
  'app_tls',
  'events',
  'webhooks',
  'webhook_deliveries',
  'idempotency_keys',
  'build_slots',
  'run_slots',
];

async function seedUserAndApps(repos: Repositories, ...ids: string[]): Promise<App[]> {
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
  const apps: App[] = [];
  for (const id of ids) {
    const app: App = { uuid: `uuid-${id}`, id, owner: 'alice', structure: {}, created: new Date(T0), updated: new Date(T0) };
    await repos.apps.create(app);
    apps.push(app);
  }
  return apps;
}

function release(app: string, version: number, summary = `v${version}`): Release {
  return {
    uuid: `${app}-release-${version}-${summary}`,
    app,
    owner: 'alice',
    version,
    build: null,
    config: 'config',
    summary,
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

if (baseUrl === undefined || baseUrl === '') {
  if (process.env.CI === 'true') throw new Error('CI=true: the PostgreSQL integration tests need TEST_DATABASE_URL (a PostgreSQL server)');
  process.stdout.write(
    'PostgreSQL integration tests were not run: set TEST_DATABASE_URL ' +
      '(e.g. postgres://postgres@127.0.0.1:5432/postgres) to run them against a real server.\n',
  );
  describe.skip('PostgreSQL persistence (skipped: TEST_DATABASE_URL is not set)', () => {
    it('runs the repository contracts and the PostgreSQL-specific tests', () => undefined);
  });
} else {
  describe('PostgreSQL persistence', () => {
    // A database of its own per run, dropped afterwards, so runs never see each other's rows.
    const databaseName = `svc_test_${process.pid}_${Date.now().toString(36)}`;
    const url = new URL(baseUrl);
    url.pathname = `/${databaseName}`;
    const testUrl = url.toString();
    let admin: Client;
    let db: Database;
    let dataDir: string;
    const extra: Database[] = [];

    async function another(options: Partial<DatabaseOptions> = {}): Promise<Database> {
      const opened = await createDatabase({ url: testUrl, dataDir, ...options });
      extra.push(opened);
      return opened;
    }

    async function truncateAll(): Promise<void> {
      await admin.query(`TRUNCATE ${TABLES.map((t) => `"${t}"`).join(', ')} RESTART IDENTITY CASCADE`);
    }

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'svc-pg-'));
      const server = new Client({ connectionString: baseUrl });
      await server.connect();
      try {
        await server.query(`CREATE DATABASE "${databaseName}"`);
      } finally {
        await server.end();
      }
      admin = new Client({ connectionString: testUrl });
      await admin.connect();
      db = await createDatabase({ url: testUrl, dataDir });
      await db.migrate();
    });

    afterAll(async () => {
      await Promise.all(extra.map((d) => d.close()));
      await db?.close();
      await admin?.end();
      const server = new Client({ connectionString: baseUrl });
      await server.connect();
      try {
        await server.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`);
      } finally {
        await server.end();
      }
      await rm(dataDir, { recursive: true, force: true });
    });

    describeRepositoryContracts('PostgreSQL', async () => {
      await truncateAll();
      return { uow: db.uow, close: async () => undefined };
    });

    describe('createDatabase with a postgres:// URL', () => {
      beforeEach(truncateAll);

      it('describes its location without credentials', async () => {
        const withPassword = new URL(testUrl);
        withPassword.password = 'secret';
        const opened = await another({ url: withPassword.toString().replace(/^postgres:/, 'postgresql:') });

        expect(opened.dialect).toBe('postgres');
        expect(opened.location).toBe(`postgresql://${url.host}/${databaseName}`);
        expect(opened.location).not.toContain('secret');
      });

      it('creates every table with millisecond timestamps and byte-order collation for names', async () => {
        const tables = await admin.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
        );
        const precisions = await admin.query<{ precision: number }>(
          `SELECT DISTINCT datetime_precision AS precision FROM information_schema.columns
           WHERE table_schema = 'public' AND data_type = 'timestamp with time zone'`,
        );
        const collation = await admin.query<{ collation_name: string }>(
          `SELECT collation_name FROM information_schema.columns WHERE table_name = 'apps' AND column_name = 'id'`,
        );

        expect(tables.rows.map((r) => r.table_name)).toEqual([...TABLES, 'schema_migrations'].sort());
        expect(precisions.rows).toEqual([{ precision: 3 }]);
        expect(collation.rows).toEqual([{ collation_name: 'C' }]);
      });

      it('creates the unique constraints and indexes the repositories rely on', async () => {
        const result = await admin.query<{ name: string }>(
          `SELECT indexname AS name FROM pg_indexes WHERE schemaname = 'public' AND indexname ~ '^(ix|uq)_' ORDER BY indexname`,
        );

        expect(result.rows.map((r) => r.name)).toEqual(
          [
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
            'uq_events_uuid',
            'uq_webhook_deliveries_uuid',
            'uq_apps_id',
            'uq_certificates_common_name',
            'uq_domains_domain',
            'uq_keys_fingerprint',
            'uq_keys_owner_id',
            'uq_permissions_app_username',
            'uq_releases_app_version',
            'uq_users_username',
          ].sort(),
        );
      });

      it('ping answers true while open and false once closed', async () => {
        const opened = await another();

        expect(await opened.ping()).toBe(true);
        await opened.close();
        expect(await opened.ping()).toBe(false);
      });

      it('retries the first connection, then gives up with the error', async () => {
        const warnings: string[] = [];
        const started = Date.now();

        await expect(
          createDatabase({
            url: 'postgres://postgres@127.0.0.1:1/none',
            dataDir,
            connectRetries: 1,
            logger: { info: () => undefined, warn: (message) => warnings.push(message) },
          }),
        ).rejects.toThrow();

        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(/^Cannot connect to postgresql:\/\/127\.0\.0\.1:1\/none .*retrying in 500 ms \(1\/1\)$/);
        expect(Date.now() - started).toBeGreaterThanOrEqual(450);
      });
    });

    describe('migrations', () => {
      it('are idempotent: migrating again applies nothing', async () => {
        await db.migrate();
        const recorded = await admin.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');

        expect(recorded.rows).toEqual([
          { name: 'AcmeFairness1796200000033' },
          { name: 'BuildSlots1795820400000' },
          { name: 'BuildWorkdir1763884800000' },
          { name: 'DeployLeases1764072000000' },
          { name: 'Events1795734000000' },
          { name: 'InitialSchema1763712000000' },
          { name: 'JournalByApp1796300000036' },
          { name: 'ListCounts1763990000000' },
          { name: 'LoginFailureAddress1764000000010' },
          { name: 'RunSlots1796400000037' },
          { name: 'SharedState1763798400000' },
          { name: 'TlsState1764200000000' },
          { name: 'WebhookHealth1796500000034' },
        ]);
      });

      it('may run from several processes at once', async () => {
        const first = await another();
        const second = await another();

        await Promise.all([first.migrate(), second.migrate(), db.migrate()]);

        // Each migration once: as many rows as the migration set has (the list above).
        expect((await admin.query('SELECT name FROM schema_migrations')).rowCount).toBe(migrationsFor('postgres').length);
      });

      it('ListCounts counts the rows already there when applied, and again after a TRUNCATE', async () => {
        await truncateAll();
        const repos = db.uow.repositories;
        await seedUserAndApps(repos, 'mine', 'other');
        await admin.query(`INSERT INTO "users" ("username", "email", "first_name", "last_name", "password_hash", "is_superuser", "is_staff", "is_active", "date_joined")
          VALUES ('bob', 'bob@example.com', '', '', 'x', false, false, true, now())`);
        const runner = { query: (sql: string) => admin.query(sql) } as unknown as QueryRunner;
        const migration = new ListCountsPostgres1763990000000();

        await migration.down(runner);
        // Written while no trigger keeps count, as by the previous version of the controller.
        await admin.query(`INSERT INTO "permissions" ("app", "username") VALUES ('mine', 'bob'), ('other', 'alice')`);
        for (const version of [1, 2, 3]) await repos.releases.create(release('mine', version));
        await migration.up(runner);

        expect((await repos.apps.listVisibleTo('alice', ALL)).count).toBe(2);
        expect((await repos.apps.listVisibleTo('bob', ALL)).count).toBe(1);
        expect((await repos.apps.listVisibleTo(null, ALL)).count).toBe(2);
        expect((await repos.releases.listForApp('mine', ALL)).count).toBe(3);

        await admin.query('TRUNCATE "releases", "permissions"');

        expect((await repos.releases.listForApp('mine', ALL)).count).toBe(0);
        expect((await repos.apps.listVisibleTo('bob', ALL)).count).toBe(0);
        expect((await repos.apps.listVisibleTo('alice', ALL)).count).toBe(2);
      });
    });

    describe('concurrency', () => {
      beforeEach(truncateAll);

      it('serialises writers with lockById: 20 concurrent works make versions 1..20 without any retry', async () => {
        const strict = await another({ retry: { maxAttempts: 1 } });
        await seedUserAndApps(strict.uow.repositories, 'myapp');

        await Promise.all(
          Array.from({ length: 20 }, () =>
            strict.uow.transaction(async (repos) => {
              await repos.apps.lockById('myapp');
              const latest = await repos.releases.latest('myapp');
              await new Promise((resolve) => setTimeout(resolve, 1));
              await repos.releases.create(release('myapp', (latest?.version ?? 0) + 1));
            }),
          ),
        );

        const versions = (await strict.uow.repositories.releases.listForApp('myapp', ALL)).items.map((r) => r.version);
        expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
      });

      it('holds the row lock until the transaction ends', async () => {
        await seedUserAndApps(db.uow.repositories, 'myapp');
        const locked = gate();
        const finish = gate();
        const order: string[] = [];

        const holder = db.uow.transaction(async (repos) => {
          await repos.apps.lockById('myapp');
          locked.open();
          await finish.passed;
          order.push('holder commits');
        });
        await locked.passed;
        const waiter = db.uow.transaction(async (repos) => {
          await repos.apps.lockById('myapp');
          order.push('waiter locked');
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        order.push('released');
        finish.open();
        await Promise.all([holder, waiter]);

        expect(order).toEqual(['released', 'holder commits', 'waiter locked']);
      });

      it('retries a work whose release version was taken by a concurrent writer', async () => {
        await seedUserAndApps(db.uow.repositories, 'myapp');
        await db.uow.repositories.releases.create(release('myapp', 1));
        const read = gate();
        const fastDone = gate();
        let attempts = 0;

        const slow = db.uow.transaction(async (repos) => {
          attempts += 1;
          const next = ((await repos.releases.latest('myapp'))?.version ?? 0) + 1;
          read.open();
          if (attempts === 1) {
            // Let the fast writer take `next` first.
            await fastDone.passed;
          }
          await repos.releases.create(release('myapp', next, 'slow'));
        });
        await read.passed;
        const fast = db.uow.transaction(async (repos) => {
          const next = ((await repos.releases.latest('myapp'))?.version ?? 0) + 1;
          await repos.releases.create(release('myapp', next, 'fast'));
        });
        await fast;
        fastDone.open();
        await slow;

        const releases = (await db.uow.repositories.releases.listForApp('myapp', ALL)).items;
        expect(attempts).toBe(2);
        expect(releases.map((r) => [r.version, r.summary])).toEqual([
          [3, 'slow'],
          [2, 'fast'],
          [1, 'v1'],
        ]);
      });

      it('retries the transaction that the server picked as a deadlock victim', async () => {
        await seedUserAndApps(db.uow.repositories, 'one', 'two');
        const bothLocked = { first: gate(), second: gate() };
        let attempts = 0;

        const work = (mine: 'one' | 'two', theirs: 'one' | 'two', signal: ReturnType<typeof gate>, wait: Promise<void>) =>
          db.uow.transaction(async (repos) => {
            attempts += 1;
            const app = await repos.apps.lockById(mine);
            signal.open();
            await wait;
            await repos.apps.lockById(theirs);
            if (app) await repos.apps.update({ ...app, structure: { web: attempts } });
          });

        await Promise.all([
          work('one', 'two', bothLocked.first, bothLocked.second.passed),
          work('two', 'one', bothLocked.second, bothLocked.first.passed),
        ]);

        expect(attempts).toBe(3);
      });
    });
  });
}
