import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Fair certificate issuance (ADR 0033): each name's back-off, per owner, kept apart from its
 * row, so that removing a domain and adding it again keeps its failures and next attempt, and
 * the pause of new orders after the ACME account's rate limit, shared by every controller
 * process. New tables only: processes of the previous version keep working while they are
 * created.
 */
const UP = [
  `CREATE TABLE "acme_backoffs" (
    "name" text NOT NULL,
    "owner" text NOT NULL,
    "failures" integer NOT NULL,
    "next_attempt" datetime NOT NULL,
    "reason" text,
    PRIMARY KEY ("name", "owner")
  )`,
  'CREATE INDEX "ix_acme_backoffs_next_attempt" ON "acme_backoffs" ("next_attempt")',
  `CREATE TABLE "acme_pauses" (
    "kind" text PRIMARY KEY NOT NULL,
    "until" datetime NOT NULL
  )`,
];

/** Creates the ACME back-off and pause tables on SQLite. */
export class AcmeFairnessSqlite1796200000033 implements MigrationInterface {
  name = 'AcmeFairness1796200000033';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['acme_pauses', 'acme_backoffs']) await runner.query(`DROP TABLE "${table}"`);
  }
}
