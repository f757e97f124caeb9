import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * SQLite keeps instants as UTC text `YYYY-MM-DD HH:MM:SS.SSS` (declared `datetime`), which
 * sorts in time order, and JSON as text. AUTOINCREMENT keeps ids from being reused, so
 * "ordered by id" stays "ordered by creation" after deletions.
 */
const UP = [
  `CREATE TABLE "users" (
    "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "username" text NOT NULL,
    "email" text NOT NULL,
    "first_name" text NOT NULL,
    "last_name" text NOT NULL,
    "password_hash" text NOT NULL,
    "is_superuser" boolean NOT NULL,
    "is_staff" boolean NOT NULL,
    "is_active" boolean NOT NULL,
    "last_login" datetime,
    "date_joined" datetime NOT NULL,
    CONSTRAINT "uq_users_username" UNIQUE ("username")
  )`,
  `CREATE INDEX "ix_users_is_superuser_id" ON "users" ("is_superuser", "id")`,

  `CREATE TABLE "tokens" (
    "hash" text PRIMARY KEY NOT NULL,
    "username" text NOT NULL,
    "created" datetime NOT NULL,
    "expires" datetime,
    CONSTRAINT "fk_tokens_username" FOREIGN KEY ("username") REFERENCES "users" ("username") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_tokens_username" ON "tokens" ("username")`,

  // No foreign key: failures are recorded for unknown usernames too.
  `CREATE TABLE "login_failures" (
    "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "username" text NOT NULL,
    "at" datetime NOT NULL
  )`,
  `CREATE INDEX "ix_login_failures_username_at" ON "login_failures" ("username", "at")`,

  `CREATE TABLE "apps" (
    "uuid" text PRIMARY KEY NOT NULL,
    "id" text NOT NULL,
    "owner" text NOT NULL,
    "structure" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "uq_apps_id" UNIQUE ("id"),
    CONSTRAINT "fk_apps_owner" FOREIGN KEY ("owner") REFERENCES "users" ("username")
  )`,
  `CREATE INDEX "ix_apps_owner_id" ON "apps" ("owner", "id")`,

  `CREATE TABLE "configs" (
    "uuid" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "owner" text NOT NULL,
    "values" text NOT NULL,
    "memory" text NOT NULL,
    "cpu" text NOT NULL,
    "tags" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "fk_configs_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_configs_app" ON "configs" ("app")`,

  `CREATE TABLE "builds" (
    "uuid" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "owner" text NOT NULL,
    "image" text NOT NULL,
    "dockerfile" text NOT NULL,
    "procfile" text NOT NULL,
    "sha" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "fk_builds_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_builds_app_created" ON "builds" ("app", "created")`,

  `CREATE TABLE "releases" (
    "uuid" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "owner" text NOT NULL,
    "version" integer NOT NULL,
    "build" text,
    "config" text NOT NULL,
    "summary" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "uq_releases_app_version" UNIQUE ("app", "version"),
    CONSTRAINT "fk_releases_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,

  `CREATE TABLE "containers" (
    "uuid" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "owner" text NOT NULL,
    "release" integer NOT NULL,
    "type" text NOT NULL,
    "num" integer NOT NULL,
    "state" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "fk_containers_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_containers_app_created_type_num" ON "containers" ("app", "created", "type", "num")`,
  `CREATE INDEX "ix_containers_app_type_created_num" ON "containers" ("app", "type", "created", "num")`,

  `CREATE TABLE "domains" (
    "uuid" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "domain" text NOT NULL,
    "owner" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "uq_domains_domain" UNIQUE ("domain"),
    CONSTRAINT "fk_domains_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_domains_app_domain" ON "domains" ("app", "domain")`,

  `CREATE TABLE "keys" (
    "uuid" text PRIMARY KEY NOT NULL,
    "id" text NOT NULL,
    "owner" text NOT NULL,
    "public" text NOT NULL,
    "fingerprint" text NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "uq_keys_owner_id" UNIQUE ("owner", "id"),
    CONSTRAINT "uq_keys_fingerprint" UNIQUE ("fingerprint"),
    CONSTRAINT "fk_keys_owner" FOREIGN KEY ("owner") REFERENCES "users" ("username") ON DELETE CASCADE
  )`,

  `CREATE TABLE "permissions" (
    "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "app" text NOT NULL,
    "username" text NOT NULL,
    CONSTRAINT "uq_permissions_app_username" UNIQUE ("app", "username"),
    CONSTRAINT "fk_permissions_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE,
    CONSTRAINT "fk_permissions_username" FOREIGN KEY ("username") REFERENCES "users" ("username") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_permissions_username" ON "permissions" ("username")`,

  `CREATE TABLE "certificates" (
    "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "common_name" text NOT NULL,
    "owner" text NOT NULL,
    "certificate" text NOT NULL,
    "sealed_key" text NOT NULL,
    "san" text NOT NULL,
    "fingerprint" text NOT NULL,
    "issuer" text NOT NULL,
    "starts" datetime NOT NULL,
    "expires" datetime NOT NULL,
    "created" datetime NOT NULL,
    "updated" datetime NOT NULL,
    CONSTRAINT "uq_certificates_common_name" UNIQUE ("common_name"),
    CONSTRAINT "fk_certificates_owner" FOREIGN KEY ("owner") REFERENCES "users" ("username") ON DELETE CASCADE
  )`,
  `CREATE INDEX "ix_certificates_owner_common_name" ON "certificates" ("owner", "common_name")`,
];

// Children before parents.
const TABLES = [
  'certificates',
  'permissions',
  'keys',
  'domains',
  'containers',
  'releases',
  'builds',
  'configs',
  'apps',
  'login_failures',
  'tokens',
  'users',
];

/** Creates every table, constraint and index of the controller on SQLite. */
export class InitialSchemaSqlite1763712000000 implements MigrationInterface {
  name = 'InitialSchema1763712000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of TABLES) await runner.query(`DROP TABLE "${table}"`);
  }
}
