import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The apps' log lines and the secrets generated when none is configured. AUTOINCREMENT
 * keeps ids from being reused, so the newest line of an app always has its highest id;
 * (app, id) is the index that reading the newest lines walks.
 */
const UP = [
  `CREATE TABLE "log_entries" (
    "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "app" text NOT NULL,
    "time" datetime NOT NULL,
    "source" text NOT NULL,
    "message" text NOT NULL
  )`,
  `CREATE INDEX "ix_log_entries_app_id" ON "log_entries" ("app", "id")`,

  `CREATE TABLE "controller_secrets" (
    "name" text PRIMARY KEY NOT NULL,
    "value" text NOT NULL,
    "created" datetime NOT NULL
  )`,
];

/** Creates the app log table and the shared secrets table on SQLite. */
export class SharedStateSqlite1763798400000 implements MigrationInterface {
  name = 'SharedState1763798400000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "controller_secrets"');
    await runner.query('DROP TABLE "log_entries"');
  }
}
