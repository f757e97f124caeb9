import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Builds made from a git push run in the directory their commit is checked out in; image
 * builds have none, so the column is nullable and existing rows stay as they are.
 */

/** Adds the working directory of source builds to `builds` on SQLite. */
export class BuildWorkdirSqlite1763884800000 implements MigrationInterface {
  name = 'BuildWorkdir1763884800000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE "builds" ADD COLUMN "workdir" text');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE "builds" DROP COLUMN "workdir"');
  }
}
