import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Client } from 'pg';

/**
 * Bulk loading of benchmark data straight into the controller's tables (created by its own
 * migrations), far faster than through the API. Rows look like the ones the controller
 * writes: the same date and JSON encodings, one config and release v1 per app.
 */
export interface Seeder {
  /** Apps owned by `owner`, each with its empty config and release v1. */
  addApps(owner: string, ids: readonly string[]): Promise<void>;
  /** Makes `username` a collaborator on `app`. */
  grant(app: string, username: string): Promise<void>;
  /** Releases `from` to `to` of `app`, all on the config of its release v1. */
  addReleases(app: string, owner: string, from: number, to: number): Promise<void>;
  /** Refreshes the planner's statistics, as the database's own maintenance would. */
  analyze(): Promise<void>;
  close(): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0, 0);
const CHUNK = 10_000;

/** TypeORM's encoding of an instant in a SQLite `datetime` column: UTC `YYYY-MM-DD HH:MM:SS.SSS`. */
function sqliteInstant(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** Seeds a SQLite database file through better-sqlite3. */
export class SqliteSeeder implements Seeder {
  private readonly db: Database.Database;
  private clock = T0;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 10000');
  }

  private tick(): string {
    this.clock += 1;
    return sqliteInstant(this.clock);
  }

  async addApps(owner: string, ids: readonly string[]): Promise<void> {
    const app = this.db.prepare('INSERT INTO "apps" ("uuid", "id", "owner", "structure", "created", "updated") VALUES (?, ?, ?, ?, ?, ?)');
    const config = this.db.prepare(
      'INSERT INTO "configs" ("uuid", "app", "owner", "values", "memory", "cpu", "tags", "created", "updated") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const release = this.db.prepare(
      'INSERT INTO "releases" ("uuid", "app", "owner", "version", "build", "config", "summary", "created", "updated") VALUES (?, ?, ?, 1, NULL, ?, ?, ?, ?)',
    );
    const insert = this.db.transaction((chunk: readonly string[]) => {
      for (const id of chunk) {
        const at = this.tick();
        const configUuid = randomUUID();
        app.run(randomUUID(), id, owner, '{}', at, at);
        config.run(configUuid, id, owner, '{}', '{}', '{}', '{}', at, at);
        release.run(randomUUID(), id, owner, configUuid, `${owner} created initial release`, at, at);
      }
    });
    for (let start = 0; start < ids.length; start += CHUNK) insert(ids.slice(start, start + CHUNK));
  }

  async grant(app: string, username: string): Promise<void> {
    this.db.prepare('INSERT INTO "permissions" ("app", "username") VALUES (?, ?)').run(app, username);
  }

  async addReleases(app: string, owner: string, from: number, to: number): Promise<void> {
    const first = this.db.prepare('SELECT "config" FROM "releases" WHERE "app" = ? AND "version" = 1').get(app) as { config: string };
    const release = this.db.prepare(
      'INSERT INTO "releases" ("uuid", "app", "owner", "version", "build", "config", "summary", "created", "updated") VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?)',
    );
    const insert = this.db.transaction((low: number, high: number) => {
      for (let version = low; version <= high; version++) {
        const at = this.tick();
        release.run(randomUUID(), app, owner, version, first.config, `${owner} changed nothing`, at, at);
      }
    });
    for (let low = from; low <= to; low += CHUNK) insert(low, Math.min(to, low + CHUNK - 1));
  }

  async analyze(): Promise<void> {
    // SQLite has no background maintenance: a controller's database has no statistics
    // unless someone runs ANALYZE, so the benchmark does not either.
  }

  async close(): Promise<void> {
    this.db.close();
  }

  /** Runs one statement once per row of values, in one transaction. */
  run(sql: string, rows: ReadonlyArray<readonly unknown[]>): void {
    const statement = this.db.prepare(sql);
    this.db.transaction(() => {
      for (const values of rows) statement.run(...values);
    })();
  }
}

/** Seeds a PostgreSQL database with set-returning INSERT ... SELECT statements. */
export class PostgresSeeder implements Seeder {
  private clock = T0;

  private constructor(private readonly client: Client) {}

  static async connect(url: string): Promise<PostgresSeeder> {
    const client = new Client({ connectionString: url });
    await client.connect();
    return new PostgresSeeder(client);
  }

  async addApps(owner: string, ids: readonly string[]): Promise<void> {
    for (let start = 0; start < ids.length; start += CHUNK) {
      const chunk = ids.slice(start, start + CHUNK);
      const base = new Date(this.clock);
      this.clock += chunk.length;
      await this.client.query('BEGIN');
      try {
        await this.client.query(
          `INSERT INTO "apps" ("uuid", "id", "owner", "structure", "created", "updated")
           SELECT gen_random_uuid()::text, t.id, $2, '{}'::json, $3::timestamptz + t.n * interval '1 millisecond', $3::timestamptz + t.n * interval '1 millisecond'
           FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`,
          [chunk, owner, base],
        );
        await this.client.query(
          `WITH made AS (
             INSERT INTO "configs" ("uuid", "app", "owner", "values", "memory", "cpu", "tags", "created", "updated")
             SELECT gen_random_uuid()::text, a."id", a."owner", '{}'::json, '{}'::json, '{}'::json, '{}'::json, a."created", a."updated"
             FROM "apps" a WHERE a."id" = ANY($1::text[])
             RETURNING "uuid", "app", "owner", "created"
           )
           INSERT INTO "releases" ("uuid", "app", "owner", "version", "build", "config", "summary", "created", "updated")
           SELECT gen_random_uuid()::text, made."app", made."owner", 1, NULL, made."uuid", made."owner" || ' created initial release', made."created", made."created"
           FROM made`,
          [chunk],
        );
        await this.client.query('COMMIT');
      } catch (error) {
        await this.client.query('ROLLBACK');
        throw error;
      }
    }
  }

  async grant(app: string, username: string): Promise<void> {
    await this.client.query('INSERT INTO "permissions" ("app", "username") VALUES ($1, $2)', [app, username]);
  }

  async addReleases(app: string, owner: string, from: number, to: number): Promise<void> {
    const first = await this.client.query<{ config: string }>('SELECT "config" FROM "releases" WHERE "app" = $1 AND "version" = 1', [app]);
    const config = first.rows[0]?.config;
    if (config === undefined) throw new Error(`${app} has no release v1`);
    for (let low = from; low <= to; low += CHUNK) {
      const high = Math.min(to, low + CHUNK - 1);
      const base = new Date(this.clock);
      this.clock += high - low + 1;
      await this.client.query(
        `INSERT INTO "releases" ("uuid", "app", "owner", "version", "build", "config", "summary", "created", "updated")
         SELECT gen_random_uuid()::text, $1, $2, v, NULL, $3, $2 || ' changed nothing', $4::timestamptz + v * interval '1 millisecond', $4::timestamptz + v * interval '1 millisecond'
         FROM generate_series($5::int, $6::int) AS v`,
        [app, owner, config, base, low, high],
      );
    }
  }

  async analyze(): Promise<void> {
    // After a bulk load autovacuum would soon do the same; doing it now makes runs repeatable.
    await this.client.query('VACUUM ANALYZE');
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

/** A database of its own on the server of `serverUrl`, dropped again by `drop`. */
export interface ScratchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** Creates a fresh, uniquely named database on the PostgreSQL server that `serverUrl` points to. */
export async function createScratchDatabase(serverUrl: string): Promise<ScratchDatabase> {
  const name = `svc_bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      const client = new Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A user row as registration writes it (no password that logs in): the owner of seeded apps. */
export function seedUser(seeder: SqliteSeeder, username: string): void {
  seeder.run(
    'INSERT INTO "users" ("username", "email", "first_name", "last_name", "password_hash", "is_superuser", "is_staff", "is_active", "date_joined") VALUES (?, ?, \'\', \'\', \'!\', 0, 0, 1, ?)',
    [[username, `${username}@example.com`, sqliteInstant(T0)]],
  );
}


/** A domain of its own for each app: `<app><suffix>`. */
export function seedDomains(seeder: SqliteSeeder, owner: string, apps: readonly string[], suffix: string): void {
  const at = sqliteInstant(T0);
  seeder.run(
    'INSERT INTO "domains" ("uuid", "app", "domain", "owner", "created", "updated") VALUES (?, ?, ?, ?, ?, ?)',
    apps.map((app) => [randomUUID(), app, `${app}${suffix}`, owner, at, at]),
  );
}
