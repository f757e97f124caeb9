import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The totals of the paginated lists that can grow large (a user's apps, every app, an
 * app's releases and builds), kept up to date by triggers in the same transaction as the
 * rows they count, so that a page costs the page and not a COUNT(*) over every row.
 *
 * A user's count is the number of distinct apps they own or collaborate on:
 * - a new app counts for its owner; a collaborator counts unless they own the app;
 * - deleting an app uncounts it for its owner and collaborators before the cascade
 *   removes the collaborators; a collaborator removed later (revoked, or by the cascade
 *   of a user) is uncounted only while the app exists and is not theirs;
 * - a transfer uncounts the app for the old owner unless they collaborate on it, and
 *   counts it for the new owner unless they already did as a collaborator.
 *
 * Collaborators of a user are also read in app order, so (username, app) replaces the
 * index on username alone.
 */
const UP = [
  `CREATE INDEX "ix_permissions_username_app" ON "permissions" ("username", "app")`,
  `DROP INDEX "ix_permissions_username"`,

  `CREATE TABLE "visible_app_counts" (
    "username" text PRIMARY KEY NOT NULL,
    "apps" integer NOT NULL,
    CONSTRAINT "fk_visible_app_counts_username" FOREIGN KEY ("username") REFERENCES "users" ("username") ON DELETE CASCADE
  )`,
  `CREATE TABLE "app_totals" (
    "id" integer PRIMARY KEY NOT NULL CHECK ("id" = 1),
    "apps" integer NOT NULL
  )`,
  `CREATE TABLE "app_list_counts" (
    "app" text PRIMARY KEY NOT NULL,
    "releases" integer NOT NULL,
    "builds" integer NOT NULL,
    CONSTRAINT "fk_app_list_counts_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,

  `INSERT INTO "app_totals" ("id", "apps") SELECT 1, count(*) FROM "apps"`,
  `INSERT INTO "visible_app_counts" ("username", "apps")
    SELECT "username", count(*) FROM (
      SELECT "owner" AS "username", "id" AS "app" FROM "apps"
      UNION
      SELECT "username", "app" FROM "permissions"
    ) GROUP BY "username"`,
  `INSERT INTO "app_list_counts" ("app", "releases", "builds")
    SELECT a."id",
      (SELECT count(*) FROM "releases" r WHERE r."app" = a."id"),
      (SELECT count(*) FROM "builds" b WHERE b."app" = a."id")
    FROM "apps" a`,

  `CREATE TRIGGER "tr_apps_count_insert" AFTER INSERT ON "apps" BEGIN
    INSERT INTO "app_totals" ("id", "apps") VALUES (1, 1) ON CONFLICT ("id") DO UPDATE SET "apps" = "apps" + 1;
    INSERT INTO "visible_app_counts" ("username", "apps") VALUES (NEW."owner", 1)
      ON CONFLICT ("username") DO UPDATE SET "apps" = "apps" + 1;
  END`,
  `CREATE TRIGGER "tr_apps_count_delete" BEFORE DELETE ON "apps" BEGIN
    UPDATE "app_totals" SET "apps" = "apps" - 1 WHERE "id" = 1;
    UPDATE "visible_app_counts" SET "apps" = "apps" - 1
      WHERE "username" = OLD."owner" OR "username" IN (SELECT "username" FROM "permissions" WHERE "app" = OLD."id");
  END`,
  `CREATE TRIGGER "tr_apps_count_transfer" AFTER UPDATE OF "owner" ON "apps" WHEN OLD."owner" <> NEW."owner" BEGIN
    UPDATE "visible_app_counts" SET "apps" = "apps" - 1
      WHERE "username" = OLD."owner"
        AND NOT EXISTS (SELECT 1 FROM "permissions" WHERE "app" = NEW."id" AND "username" = OLD."owner");
    INSERT INTO "visible_app_counts" ("username", "apps")
      SELECT NEW."owner", 1 WHERE NOT EXISTS (SELECT 1 FROM "permissions" WHERE "app" = NEW."id" AND "username" = NEW."owner")
      ON CONFLICT ("username") DO UPDATE SET "apps" = "apps" + 1;
  END`,
  `CREATE TRIGGER "tr_permissions_count_insert" AFTER INSERT ON "permissions"
    WHEN NOT EXISTS (SELECT 1 FROM "apps" WHERE "id" = NEW."app" AND "owner" = NEW."username") BEGIN
    INSERT INTO "visible_app_counts" ("username", "apps") VALUES (NEW."username", 1)
      ON CONFLICT ("username") DO UPDATE SET "apps" = "apps" + 1;
  END`,
  `CREATE TRIGGER "tr_permissions_count_delete" AFTER DELETE ON "permissions"
    WHEN EXISTS (SELECT 1 FROM "apps" WHERE "id" = OLD."app" AND "owner" <> OLD."username") BEGIN
    UPDATE "visible_app_counts" SET "apps" = "apps" - 1 WHERE "username" = OLD."username";
  END`,
  `CREATE TRIGGER "tr_releases_count_insert" AFTER INSERT ON "releases" BEGIN
    INSERT INTO "app_list_counts" ("app", "releases", "builds") VALUES (NEW."app", 1, 0)
      ON CONFLICT ("app") DO UPDATE SET "releases" = "releases" + 1;
  END`,
  `CREATE TRIGGER "tr_releases_count_delete" AFTER DELETE ON "releases" BEGIN
    UPDATE "app_list_counts" SET "releases" = "releases" - 1 WHERE "app" = OLD."app";
  END`,
  `CREATE TRIGGER "tr_builds_count_insert" AFTER INSERT ON "builds" BEGIN
    INSERT INTO "app_list_counts" ("app", "releases", "builds") VALUES (NEW."app", 0, 1)
      ON CONFLICT ("app") DO UPDATE SET "builds" = "builds" + 1;
  END`,
  `CREATE TRIGGER "tr_builds_count_delete" AFTER DELETE ON "builds" BEGIN
    UPDATE "app_list_counts" SET "builds" = "builds" - 1 WHERE "app" = OLD."app";
  END`,
];

const DOWN = [
  'DROP TRIGGER "tr_builds_count_delete"',
  'DROP TRIGGER "tr_builds_count_insert"',
  'DROP TRIGGER "tr_releases_count_delete"',
  'DROP TRIGGER "tr_releases_count_insert"',
  'DROP TRIGGER "tr_permissions_count_delete"',
  'DROP TRIGGER "tr_permissions_count_insert"',
  'DROP TRIGGER "tr_apps_count_transfer"',
  'DROP TRIGGER "tr_apps_count_delete"',
  'DROP TRIGGER "tr_apps_count_insert"',
  'DROP TABLE "app_list_counts"',
  'DROP TABLE "app_totals"',
  'DROP TABLE "visible_app_counts"',
  'CREATE INDEX "ix_permissions_username" ON "permissions" ("username")',
  'DROP INDEX "ix_permissions_username_app"',
];

/** Adds the maintained list totals and the (username, app) collaborator index on SQLite. */
export class ListCountsSqlite1763990000000 implements MigrationInterface {
  name = 'ListCounts1763990000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const statement of DOWN) await runner.query(statement);
  }
}
