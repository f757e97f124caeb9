import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * One row per running one-off process (a `run` or a release phase): its slot, counted
 * against the app owner's QUOTA_RUNS_PER_USER by every controller process on the database,
 * as build_slots counts builds. A controller renews its runs' slots; one that stops leaves
 * slots that expire and no longer count. A new table only: processes of the previous
 * version keep working while it is created.
 */
const UP = [
  `CREATE TABLE "run_slots" (
    "run" text COLLATE "C" NOT NULL,
    "username" text COLLATE "C" NOT NULL,
    "started" timestamp(3) with time zone NOT NULL,
    "expires" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_run_slots" PRIMARY KEY ("run")
  )`,
  'CREATE INDEX "ix_run_slots_username" ON "run_slots" ("username", "expires")',
];

/** Creates the run slot table on PostgreSQL. */
export class RunSlotsPostgres1796400000037 implements MigrationInterface {
  name = 'RunSlots1796400000037';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "run_slots"');
  }
}
