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
 *   of a user) is uncounted only while the app exists and is not theirs (the cascade of
 *   an app runs after the app's row is gone, so it is not counted twice);
 * - a transfer uncounts the app for the old owner unless they collaborate on it, and
 *   counts it for the new owner unless they already did as a collaborator.
 *
 * TRUNCATE fires no row triggers: after one of these tables is truncated, every total is
 * counted again from the rows (as the migration does the first time).
 *
 * The counter rows are locked by the transactions that change them: the total of every app
 * by app creation and deletion, a user's by changes to the apps they see, an app's by new
 * releases and builds (which already hold the app's row lock). Collaborators of a user are
 * also read in app order, so (username, app) replaces the index on username alone.
 */
const NAME = 'text COLLATE "C"';
/** The tables whose truncation makes every total be counted again. */
const RECOUNTED = ['apps', 'permissions', 'releases', 'builds', 'app_totals', 'visible_app_counts', 'app_list_counts'];

const UP = [
  `CREATE INDEX "ix_permissions_username_app" ON "permissions" ("username", "app")`,
  `DROP INDEX "ix_permissions_username"`,

  `CREATE TABLE "visible_app_counts" (
    "username" ${NAME} NOT NULL,
    "apps" integer NOT NULL,
    CONSTRAINT "pk_visible_app_counts" PRIMARY KEY ("username"),
    CONSTRAINT "fk_visible_app_counts_username" FOREIGN KEY ("username") REFERENCES "users" ("username") ON DELETE CASCADE
  )`,
  `CREATE TABLE "app_totals" (
    "id" integer NOT NULL,
    "apps" integer NOT NULL,
    CONSTRAINT "pk_app_totals" PRIMARY KEY ("id"),
    CONSTRAINT "ck_app_totals_single_row" CHECK ("id" = 1)
  )`,
  `CREATE TABLE "app_list_counts" (
    "app" ${NAME} NOT NULL,
    "releases" integer NOT NULL,
    "builds" integer NOT NULL,
    CONSTRAINT "pk_app_list_counts" PRIMARY KEY ("app"),
    CONSTRAINT "fk_app_list_counts_app" FOREIGN KEY ("app") REFERENCES "apps" ("id") ON DELETE CASCADE
  )`,

  `CREATE FUNCTION "svc_recount_lists"() RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    DELETE FROM "app_totals";
    INSERT INTO "app_totals" ("id", "apps") SELECT 1, count(*) FROM "apps";
    DELETE FROM "visible_app_counts";
    INSERT INTO "visible_app_counts" ("username", "apps")
      SELECT "username", count(*) FROM (
        SELECT "owner" AS "username", "id" AS "app" FROM "apps"
        UNION
        SELECT "username", "app" FROM "permissions"
      ) AS "visible" GROUP BY "username";
    DELETE FROM "app_list_counts";
    INSERT INTO "app_list_counts" ("app", "releases", "builds")
      SELECT a."id",
        (SELECT count(*) FROM "releases" r WHERE r."app" = a."id"),
        (SELECT count(*) FROM "builds" b WHERE b."app" = a."id")
      FROM "apps" a;
  END $$`,
  `SELECT "svc_recount_lists"()`,
  `CREATE FUNCTION "svc_recount_lists_after_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM "svc_recount_lists"();
    RETURN NULL;
  END $$`,
  ...RECOUNTED.map(
    (table) =>
      `CREATE TRIGGER "tr_${table}_recount_truncate" AFTER TRUNCATE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION "svc_recount_lists_after_truncate"()`,
  ),

  `CREATE FUNCTION "svc_count_app_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO "app_totals" AS t ("id", "apps") VALUES (1, 1) ON CONFLICT ("id") DO UPDATE SET "apps" = t."apps" + 1;
    INSERT INTO "visible_app_counts" AS c ("username", "apps") VALUES (NEW."owner", 1)
      ON CONFLICT ("username") DO UPDATE SET "apps" = c."apps" + 1;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_apps_count_insert" AFTER INSERT ON "apps" FOR EACH ROW EXECUTE FUNCTION "svc_count_app_insert"()`,

  `CREATE FUNCTION "svc_count_app_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE "app_totals" SET "apps" = "apps" - 1 WHERE "id" = 1;
    UPDATE "visible_app_counts" SET "apps" = "apps" - 1
      WHERE "username" = OLD."owner" OR "username" IN (SELECT "username" FROM "permissions" WHERE "app" = OLD."id");
    RETURN OLD;
  END $$`,
  `CREATE TRIGGER "tr_apps_count_delete" BEFORE DELETE ON "apps" FOR EACH ROW EXECUTE FUNCTION "svc_count_app_delete"()`,

  `CREATE FUNCTION "svc_count_app_transfer"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE "visible_app_counts" SET "apps" = "apps" - 1
      WHERE "username" = OLD."owner"
        AND NOT EXISTS (SELECT 1 FROM "permissions" WHERE "app" = NEW."id" AND "username" = OLD."owner");
    INSERT INTO "visible_app_counts" AS c ("username", "apps")
      SELECT NEW."owner", 1 WHERE NOT EXISTS (SELECT 1 FROM "permissions" WHERE "app" = NEW."id" AND "username" = NEW."owner")
      ON CONFLICT ("username") DO UPDATE SET "apps" = c."apps" + 1;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_apps_count_transfer" AFTER UPDATE OF "owner" ON "apps" FOR EACH ROW
    WHEN (OLD."owner" IS DISTINCT FROM NEW."owner") EXECUTE FUNCTION "svc_count_app_transfer"()`,

  `CREATE FUNCTION "svc_count_permission_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NOT EXISTS (SELECT 1 FROM "apps" WHERE "id" = NEW."app" AND "owner" = NEW."username") THEN
      INSERT INTO "visible_app_counts" AS c ("username", "apps") VALUES (NEW."username", 1)
        ON CONFLICT ("username") DO UPDATE SET "apps" = c."apps" + 1;
    END IF;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_permissions_count_insert" AFTER INSERT ON "permissions" FOR EACH ROW EXECUTE FUNCTION "svc_count_permission_insert"()`,

  `CREATE FUNCTION "svc_count_permission_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM "apps" WHERE "id" = OLD."app" AND "owner" <> OLD."username") THEN
      UPDATE "visible_app_counts" SET "apps" = "apps" - 1 WHERE "username" = OLD."username";
    END IF;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_permissions_count_delete" AFTER DELETE ON "permissions" FOR EACH ROW EXECUTE FUNCTION "svc_count_permission_delete"()`,

  `CREATE FUNCTION "svc_count_release_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO "app_list_counts" AS c ("app", "releases", "builds") VALUES (NEW."app", 1, 0)
      ON CONFLICT ("app") DO UPDATE SET "releases" = c."releases" + 1;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_releases_count_insert" AFTER INSERT ON "releases" FOR EACH ROW EXECUTE FUNCTION "svc_count_release_insert"()`,

  `CREATE FUNCTION "svc_count_release_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE "app_list_counts" SET "releases" = "releases" - 1 WHERE "app" = OLD."app";
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_releases_count_delete" AFTER DELETE ON "releases" FOR EACH ROW EXECUTE FUNCTION "svc_count_release_delete"()`,

  `CREATE FUNCTION "svc_count_build_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO "app_list_counts" AS c ("app", "releases", "builds") VALUES (NEW."app", 0, 1)
      ON CONFLICT ("app") DO UPDATE SET "builds" = c."builds" + 1;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_builds_count_insert" AFTER INSERT ON "builds" FOR EACH ROW EXECUTE FUNCTION "svc_count_build_insert"()`,

  `CREATE FUNCTION "svc_count_build_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE "app_list_counts" SET "builds" = "builds" - 1 WHERE "app" = OLD."app";
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER "tr_builds_count_delete" AFTER DELETE ON "builds" FOR EACH ROW EXECUTE FUNCTION "svc_count_build_delete"()`,
];

const TRIGGERS: [table: string, trigger: string, fn: string][] = [
  ['builds', 'tr_builds_count_delete', 'svc_count_build_delete'],
  ['builds', 'tr_builds_count_insert', 'svc_count_build_insert'],
  ['releases', 'tr_releases_count_delete', 'svc_count_release_delete'],
  ['releases', 'tr_releases_count_insert', 'svc_count_release_insert'],
  ['permissions', 'tr_permissions_count_delete', 'svc_count_permission_delete'],
  ['permissions', 'tr_permissions_count_insert', 'svc_count_permission_insert'],
  ['apps', 'tr_apps_count_transfer', 'svc_count_app_transfer'],
  ['apps', 'tr_apps_count_delete', 'svc_count_app_delete'],
  ['apps', 'tr_apps_count_insert', 'svc_count_app_insert'],
];

/** Adds the maintained list totals and the (username, app) collaborator index on PostgreSQL. */
export class ListCountsPostgres1763990000000 implements MigrationInterface {
  name = 'ListCounts1763990000000';

  async up(runner: QueryRunner): Promise<void> {
    for (const statement of UP) await runner.query(statement);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of RECOUNTED) await runner.query(`DROP TRIGGER "tr_${table}_recount_truncate" ON "${table}"`);
    await runner.query('DROP FUNCTION "svc_recount_lists_after_truncate"()');
    await runner.query('DROP FUNCTION "svc_recount_lists"()');
    for (const [table, trigger, fn] of TRIGGERS) {
      await runner.query(`DROP TRIGGER "${trigger}" ON "${table}"`);
      await runner.query(`DROP FUNCTION "${fn}"()`);
    }
    await runner.query('DROP TABLE "app_list_counts"');
    await runner.query('DROP TABLE "app_totals"');
    await runner.query('DROP TABLE "visible_app_counts"');
    await runner.query('CREATE INDEX "ix_permissions_username" ON "permissions" ("username")');
    await runner.query('DROP INDEX "ix_permissions_username_app"');
  }
}
