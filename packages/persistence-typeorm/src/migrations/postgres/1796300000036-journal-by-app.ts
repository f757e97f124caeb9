import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The journal of an app is keyed by the app's uuid, not its name: an app created again
 * under a deleted one's name must not read the deleted one's events. Existing events get
 * the uuid of the app that has their name now, if it existed when they were written (an
 * event older than the app is an earlier app's); the events of apps deleted before stay
 * without one, which no user but an administrator reads. Failed logins are counted per
 * client address (how many a minute are journaled). Stored idempotent answers are sealed
 * from now on; those kept so far are in clear text (a new token, a webhook's secret) and
 * cannot be sealed here without the server's secret, so they are deleted.
 */
const UP = [
  'ALTER TABLE "events" ADD COLUMN "app_uuid" text COLLATE "C"',
  'UPDATE "events" SET "app_uuid" = (SELECT "a"."uuid" FROM "apps" "a" WHERE "a"."id" = "events"."app" AND "a"."created" <= "events"."created") ' +
    'WHERE "app" IS NOT NULL',
  'CREATE INDEX "ix_events_app_uuid" ON "events" ("app_uuid", "seq")',
  'CREATE INDEX "ix_login_failures_address_at" ON "login_failures" ("address", "at")',
  'DELETE FROM "idempotency_keys" WHERE "response" IS NOT NULL',
];

const DOWN = [
  'DROP INDEX "ix_login_failures_address_at"',
  'DROP INDEX "ix_events_app_uuid"',
  'ALTER TABLE "events" DROP COLUMN "app_uuid"',
];

/** Keys the journal by app uuid, indexes failed logins by address, drops unsealed idempotent answers, on PostgreSQL. */
export class JournalByAppPostgres1796300000036 implements MigrationInterface {
  name = 'JournalByApp1796300000036';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const statement of DOWN) await runner.query(statement);
  }
}
