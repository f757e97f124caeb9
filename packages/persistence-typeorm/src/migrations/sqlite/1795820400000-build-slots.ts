import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * One row per running build: its slot, counted against its user's QUOTA_BUILDS_PER_USER by
 * every controller process on the database. A controller renews its builds' slots; one
 * that stops leaves slots that expire and no longer count. A new table only.
 */
const UP = [
  `CREATE TABLE "build_slots" (
    "build" text PRIMARY KEY NOT NULL,
    "username" text NOT NULL,
    "started" datetime NOT NULL,
    "expires" datetime NOT NULL
  )`,
  'CREATE INDEX "ix_build_slots_username" ON "build_slots" ("username", "expires")',
];

/** Creates the build slot table on SQLite. */
export class BuildSlotsSqlite1795820400000 implements MigrationInterface {
  name = 'BuildSlots1795820400000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "build_slots"');
  }
}
