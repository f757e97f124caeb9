import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Automatic HTTPS (ADR 0024): the TLS state of every name the controller obtains a
 * certificate for over ACME (with its issuance lease), the HTTP-01 answers in progress, the
 * ACME account key per directory, and each app's HTTPS redirect. Keys are stored sealed.
 */
const UP = [
  `CREATE TABLE "tls_names" (
    "name" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "state" text NOT NULL,
    "certificate" text,
    "sealed_key" text,
    "expires" datetime,
    "reason" text,
    "failures" integer NOT NULL DEFAULT 0,
    "next_attempt" datetime NOT NULL,
    "updated" datetime NOT NULL,
    "lease_holder" text,
    "lease_expires" datetime
  )`,
  'CREATE INDEX "ix_tls_names_app" ON "tls_names" ("app")',
  `CREATE TABLE "acme_challenges" (
    "token" text PRIMARY KEY NOT NULL,
    "key_authorization" text NOT NULL,
    "name" text NOT NULL,
    "expires" datetime NOT NULL
  )`,
  `CREATE TABLE "acme_accounts" (
    "directory" text PRIMARY KEY NOT NULL,
    "sealed_key" text NOT NULL,
    "created" datetime NOT NULL
  )`,
  `CREATE TABLE "app_tls" (
    "app" text PRIMARY KEY NOT NULL,
    "https_redirect" boolean NOT NULL
  )`,
];

/** Creates the tables of automatic HTTPS on SQLite. */
export class TlsStateSqlite1764200000000 implements MigrationInterface {
  name = 'TlsState1764200000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['app_tls', 'acme_accounts', 'acme_challenges', 'tls_names']) await runner.query(`DROP TABLE "${table}"`);
  }
}
