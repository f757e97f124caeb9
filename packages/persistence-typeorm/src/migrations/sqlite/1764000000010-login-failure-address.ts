import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Failed logins are throttled per username and client address, so each failure records
 * the address it came from. Rows written before have none (''): they count for the
 * username alone. Adding a column with a constant default rewrites no row.
 */

/** Adds the client address of failed logins to `login_failures` on SQLite. */
export class LoginFailureAddressSqlite1764000000010 implements MigrationInterface {
  name = 'LoginFailureAddress1764000000010';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE "login_failures" ADD COLUMN "address" text NOT NULL DEFAULT ''`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE "login_failures" DROP COLUMN "address"');
  }
}
