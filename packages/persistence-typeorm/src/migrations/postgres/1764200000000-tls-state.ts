import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Automatic HTTPS (ADR 0024): the TLS state of every name the controller obtains a
 * certificate for over ACME (with the issuance lease of one controller process), the HTTP-01
 * answers in progress (every router serves them), the ACME account key per directory, and
 * each app's HTTPS redirect. Keys are stored sealed with the server secret. New tables only:
 * processes of the previous version keep working while they are created.
 */
const UP = [
  `CREATE TABLE "tls_names" (
    "name" text COLLATE "C" NOT NULL,
    "app" text COLLATE "C" NOT NULL,
    "state" text NOT NULL,
    "certificate" text,
    "sealed_key" text,
    "expires" timestamp(3) with time zone,
    "reason" text,
    "failures" integer NOT NULL DEFAULT 0,
    "next_attempt" timestamp(3) with time zone NOT NULL,
    "updated" timestamp(3) with time zone NOT NULL,
    "lease_holder" text,
    "lease_expires" timestamp(3) with time zone,
    CONSTRAINT "pk_tls_names" PRIMARY KEY ("name")
  )`,
  'CREATE INDEX "ix_tls_names_app" ON "tls_names" ("app")',
  `CREATE TABLE "acme_challenges" (
    "token" text COLLATE "C" NOT NULL,
    "key_authorization" text NOT NULL,
    "name" text NOT NULL,
    "expires" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_acme_challenges" PRIMARY KEY ("token")
  )`,
  `CREATE TABLE "acme_accounts" (
    "directory" text NOT NULL,
    "sealed_key" text NOT NULL,
    "created" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_acme_accounts" PRIMARY KEY ("directory")
  )`,
  `CREATE TABLE "app_tls" (
    "app" text COLLATE "C" NOT NULL,
    "https_redirect" boolean NOT NULL,
    CONSTRAINT "pk_app_tls" PRIMARY KEY ("app")
  )`,
];

/** Creates the tables of automatic HTTPS on PostgreSQL. */
export class TlsStatePostgres1764200000000 implements MigrationInterface {
  name = 'TlsState1764200000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['app_tls', 'acme_accounts', 'acme_challenges', 'tls_names']) await runner.query(`DROP TABLE "${table}"`);
  }
}
