import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * One row per app whose containers are being changed (ADR 0009): the deploy's lease. It
 * lists the containers the deploy started and has not yet published, so that a controller
 * that dies mid-rollout leaves a record of what to stop. No foreign key: deleting an app
 * removes its lease itself, in the transaction that deletes it. A new table: processes of
 * the previous version keep working while it is created.
 */
const UP = [
  `CREATE TABLE "deploys" (
    "app" text COLLATE "C" NOT NULL,
    "holder" text NOT NULL,
    "version" integer,
    "containers" jsonb NOT NULL,
    "started" timestamp(3) with time zone NOT NULL,
    "heartbeat" timestamp(3) with time zone NOT NULL,
    "expires" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_deploys" PRIMARY KEY ("app")
  )`,
];

/** Creates the deploy lease table on PostgreSQL. */
export class DeployLeasesPostgres1764072000000 implements MigrationInterface {
  name = 'DeployLeases1764072000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "deploys"');
  }
}
