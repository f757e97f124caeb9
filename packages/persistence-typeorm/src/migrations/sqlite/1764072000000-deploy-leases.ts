import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * One row per app whose containers are being changed (ADR 0009): the deploy's lease. It
 * lists the containers the deploy started and has not yet published, so that a controller
 * that dies mid-rollout leaves a record of what to stop. No foreign key: deleting an app
 * removes its lease itself, in the transaction that deletes it.
 */
const UP = [
  `CREATE TABLE "deploys" (
    "app" text PRIMARY KEY NOT NULL,
    "holder" text NOT NULL,
    "version" integer,
    "containers" text NOT NULL,
    "started" datetime NOT NULL,
    "heartbeat" datetime NOT NULL,
    "expires" datetime NOT NULL
  )`,
];

/** Creates the deploy lease table on SQLite. */
export class DeployLeasesSqlite1764072000000 implements MigrationInterface {
  name = 'DeployLeases1764072000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE "deploys"');
  }
}
