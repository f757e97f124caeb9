import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * One row per running one-off process (a `run` or a release phase): its slot, counted
 * against the app owner's QUOTA_RUNS_PER_USER, as build_slots counts builds. A controller
 * renews its runs' slots; one that stops leaves slots that expire. A new table only.
 */
const UP = [
  `CREATE TABLE "run_slots" (
    "run" text PRIMARY KEY NOT NULL,
    "username" text NOT NULL,
    "started" datetime NOT NULL,
    "expires" datetime NOT NULL
  )`,
  'CREATE INDEX "ix_run_slots_username" ON "run_slots" ("username", "expires")',
];

/** Creates the run slot table on SQLite. */
export class RunSlotsSqlite1796400000037 implements MigrationInterface {
  name = 'RunSlots1796400000037';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "run_slots"');
  }
}
