import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Fair webhook delivery (ADR 0034): each webhook records its receiver's health (status,
 * failures in a row, the last error, when attempts resume) and is claimed while one of its
 * deliveries is attempted, so that no two go to one receiver at once from any process. A
 * partial index finds each webhook's oldest pending delivery. Columns with constant
 * defaults rewrite no row: existing webhooks start active and unclaimed. Delivery claims
 * ("claimed_until" of webhook_deliveries) are no longer read; the column stays for
 * processes of the previous version while both run.
 */
const UP = [
  `ALTER TABLE "webhooks" ADD COLUMN "status" text NOT NULL DEFAULT 'active'`,
  'ALTER TABLE "webhooks" ADD COLUMN "failures" integer NOT NULL DEFAULT 0',
  `ALTER TABLE "webhooks" ADD COLUMN "last_error" text NOT NULL DEFAULT ''`,
  'ALTER TABLE "webhooks" ADD COLUMN "resumes_at" timestamp(3) with time zone',
  'ALTER TABLE "webhooks" ADD COLUMN "claimed_until" timestamp(3) with time zone',
  `CREATE INDEX "ix_webhook_deliveries_pending" ON "webhook_deliveries" ("webhook", "seq") WHERE "status" = 'pending'`,
];

/** Adds receiver health and claims to `webhooks` on PostgreSQL. */
export class WebhookHealthPostgres1796500000034 implements MigrationInterface {
  name = 'WebhookHealth1796500000034';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX "ix_webhook_deliveries_pending"');
    for (const column of ['claimed_until', 'resumes_at', 'last_error', 'failures', 'status']) await runner.query(`ALTER TABLE "webhooks" DROP COLUMN "${column}"`);
  }
}
