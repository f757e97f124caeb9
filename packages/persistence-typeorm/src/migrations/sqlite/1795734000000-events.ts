import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The audit journal (append-only; "seq" is its order), app webhooks with their deliveries
 * (a delivery row is written in the transaction of its event, so none is lost to a
 * restart), and the answers kept for requests made with an Idempotency-Key. No foreign
 * keys: events outlive what they describe, and deleting an app deletes its webhooks itself.
 */
const UP = [
  `CREATE TABLE "events" (
    "seq" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "uuid" text NOT NULL UNIQUE,
    "created" datetime NOT NULL,
    "actor" text NOT NULL,
    "action" text NOT NULL,
    "app" text,
    "target" text NOT NULL,
    "summary" text NOT NULL,
    "request_id" text NOT NULL,
    "address" text NOT NULL
  )`,
  'CREATE INDEX "ix_events_app" ON "events" ("app", "seq")',
  'CREATE INDEX "ix_events_actor" ON "events" ("actor", "seq")',
  'CREATE INDEX "ix_events_created" ON "events" ("created")',
  `CREATE TABLE "webhooks" (
    "uuid" text PRIMARY KEY NOT NULL,
    "app" text NOT NULL,
    "owner" text NOT NULL,
    "url" text NOT NULL,
    "events" text NOT NULL,
    "sealed_secret" text NOT NULL,
    "created" datetime NOT NULL
  )`,
  'CREATE INDEX "ix_webhooks_app" ON "webhooks" ("app", "created")',
  `CREATE TABLE "webhook_deliveries" (
    "seq" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
    "uuid" text NOT NULL UNIQUE,
    "webhook" text NOT NULL,
    "app" text NOT NULL,
    "event" text NOT NULL,
    "action" text NOT NULL,
    "payload" text NOT NULL,
    "status" text NOT NULL,
    "attempts" integer NOT NULL,
    "next_attempt" datetime,
    "last_code" integer,
    "last_attempt" datetime,
    "last_error" text NOT NULL,
    "created" datetime NOT NULL,
    "claimed_until" datetime
  )`,
  'CREATE INDEX "ix_webhook_deliveries_webhook" ON "webhook_deliveries" ("webhook", "seq")',
  'CREATE INDEX "ix_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt")',
  `CREATE TABLE "idempotency_keys" (
    "username" text NOT NULL,
    "key" text NOT NULL,
    "fingerprint" text NOT NULL,
    "response" text,
    "created" datetime NOT NULL,
    PRIMARY KEY ("username", "key")
  )`,
  'CREATE INDEX "ix_idempotency_keys_created" ON "idempotency_keys" ("created")',
];

/** Creates the journal, webhook and idempotency tables on SQLite. */
export class EventsSqlite1795734000000 implements MigrationInterface {
  name = 'Events1795734000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['idempotency_keys', 'webhook_deliveries', 'webhooks', 'events']) await runner.query(`DROP TABLE "${table}"`);
  }
}
