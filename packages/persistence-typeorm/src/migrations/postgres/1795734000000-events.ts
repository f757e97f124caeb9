import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The audit journal (append-only; "seq" is its order: appends take a transaction-level
 * advisory lock, so sequence order is commit order), app webhooks with their deliveries (a
 * delivery row is written in the transaction of its event, so none is lost to a restart),
 * and the answers kept for requests made with an Idempotency-Key. No foreign keys: events
 * outlive what they describe, and deleting an app deletes its webhooks itself. New tables
 * only: processes of the previous version keep working while they are created.
 */
const UP = [
  `CREATE TABLE "events" (
    "seq" bigint GENERATED ALWAYS AS IDENTITY,
    "uuid" text COLLATE "C" NOT NULL,
    "created" timestamp(3) with time zone NOT NULL,
    "actor" text COLLATE "C" NOT NULL,
    "action" text COLLATE "C" NOT NULL,
    "app" text COLLATE "C",
    "target" text NOT NULL,
    "summary" text NOT NULL,
    "request_id" text NOT NULL,
    "address" text NOT NULL,
    CONSTRAINT "pk_events" PRIMARY KEY ("seq"),
    CONSTRAINT "uq_events_uuid" UNIQUE ("uuid")
  )`,
  'CREATE INDEX "ix_events_app" ON "events" ("app", "seq")',
  'CREATE INDEX "ix_events_actor" ON "events" ("actor", "seq")',
  'CREATE INDEX "ix_events_created" ON "events" ("created")',
  `CREATE TABLE "webhooks" (
    "uuid" text COLLATE "C" NOT NULL,
    "app" text COLLATE "C" NOT NULL,
    "owner" text COLLATE "C" NOT NULL,
    "url" text NOT NULL,
    "events" jsonb NOT NULL,
    "sealed_secret" text NOT NULL,
    "created" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_webhooks" PRIMARY KEY ("uuid")
  )`,
  'CREATE INDEX "ix_webhooks_app" ON "webhooks" ("app", "created")',
  `CREATE TABLE "webhook_deliveries" (
    "seq" bigint GENERATED ALWAYS AS IDENTITY,
    "uuid" text COLLATE "C" NOT NULL,
    "webhook" text COLLATE "C" NOT NULL,
    "app" text COLLATE "C" NOT NULL,
    "event" text COLLATE "C" NOT NULL,
    "action" text NOT NULL,
    "payload" text NOT NULL,
    "status" text NOT NULL,
    "attempts" integer NOT NULL,
    "next_attempt" timestamp(3) with time zone,
    "last_code" integer,
    "last_attempt" timestamp(3) with time zone,
    "last_error" text NOT NULL,
    "created" timestamp(3) with time zone NOT NULL,
    "claimed_until" timestamp(3) with time zone,
    CONSTRAINT "pk_webhook_deliveries" PRIMARY KEY ("seq"),
    CONSTRAINT "uq_webhook_deliveries_uuid" UNIQUE ("uuid")
  )`,
  'CREATE INDEX "ix_webhook_deliveries_webhook" ON "webhook_deliveries" ("webhook", "seq")',
  'CREATE INDEX "ix_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt")',
  `CREATE TABLE "idempotency_keys" (
    "username" text COLLATE "C" NOT NULL,
    "key" text COLLATE "C" NOT NULL,
    "fingerprint" text NOT NULL,
    "response" text,
    "created" timestamp(3) with time zone NOT NULL,
    CONSTRAINT "pk_idempotency_keys" PRIMARY KEY ("username", "key")
  )`,
  'CREATE INDEX "ix_idempotency_keys_created" ON "idempotency_keys" ("created")',
];

/** Creates the journal, webhook and idempotency tables on PostgreSQL. */
export class EventsPostgres1795734000000 implements MigrationInterface {
  name = 'Events1795734000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['idempotency_keys', 'webhook_deliveries', 'webhooks', 'events']) await runner.query(`DROP TABLE "${table}"`);
  }
}
