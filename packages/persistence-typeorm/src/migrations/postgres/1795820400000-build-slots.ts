import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * One row per running build: its slot, counted against its user's QUOTA_BUILDS_PER_USER by
 * every controller process on the database. A controller renews its builds' slots; one
 * that stops leaves slots that expire and no longer count. A new table only: processes of
 * the previous version keep working while it is created.
 */
const UP = [
  `CREATE TABLE "build_slots" (
    "build" text COLLATE "C" NOT NULL,
    "username" text COLLATE "C" NOT NULL,
    "started" timestamp(3) with time zone NOT NULL,
    "expires" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_build_slots" PRIMARY KEY ("build")
  )`,
  'CREATE INDEX "ix_build_slots_username" ON "build_slots" ("username", "expires")',
];

/** Creates the build slot table on PostgreSQL. */
export class BuildSlotsPostgres1795820400000 implements MigrationInterface {
  name = 'BuildSlots1795820400000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "build_slots"');
  }
}
