import type { App, AppRepository, Page, PermissionRepository, Slice } from '@svc/core';
import { translateUniqueViolation } from '../constraints';
import { fromApp, toApp } from '../mapping';
import { appRowOf, countOf, APP_COLUMNS, type RawRow } from '../rows';
import type { Session } from '../session';
import { statement } from '../sql';

const FIND_APP = statement(`SELECT ${APP_COLUMNS} FROM "apps" WHERE "id" = ?`);
const LOCK_APP = statement(`SELECT ${APP_COLUMNS} FROM "apps" WHERE "id" = ? FOR UPDATE`);
const PAGE_OF_ALL_APPS = statement(`SELECT ${APP_COLUMNS} FROM "apps" ORDER BY "id" LIMIT ? OFFSET ?`);
/*
 * A user's apps are the ones they own and the ones they collaborate on. Each source yields
 * its first offset + limit ids in id order along its own index (owner, id) and
 * (username, app); their union holds the page, so a page costs the rows before its end,
 * never the whole list, whichever source is the larger.
 */
const PAGE_OF_VISIBLE_APPS = statement(
  `SELECT ${APP_COLUMNS} FROM "apps" WHERE "id" IN (
    SELECT "id" FROM (SELECT "id" FROM "apps" WHERE "owner" = ? ORDER BY "id" LIMIT ?) AS "owned"
    UNION
    SELECT "app" FROM (SELECT "app" FROM "permissions" WHERE "username" = ? ORDER BY "app" LIMIT ?) AS "shared"
  ) ORDER BY "id" LIMIT ? OFFSET ?`,
);
// Totals kept by triggers (migration ListCounts): counting the rows would cost every row.
const COUNT_ALL_APPS = statement('SELECT "apps" AS "n" FROM "app_totals" WHERE "id" = 1');
const COUNT_VISIBLE_APPS = statement('SELECT "apps" AS "n" FROM "visible_app_counts" WHERE "username" = ?');
// Keyset pages of every app's id along its unique index: each page costs what the first does.
const FIRST_APP_IDS = statement('SELECT "id" FROM "apps" ORDER BY "id" LIMIT ?');
const APP_IDS_AFTER = statement('SELECT "id" FROM "apps" WHERE "id" > ? ORDER BY "id" LIMIT ?');
const IS_COLLABORATOR = statement('SELECT 1 AS "granted" FROM "permissions" WHERE "app" = ? AND "username" = ?');

/** AppRepository on TypeORM. */
export class TypeOrmAppRepository implements AppRepository {
  constructor(private readonly session: Session) {}

  async findById(id: string): Promise<App | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_APP, [id]);
    return raw === undefined ? null : toApp(appRowOf(raw));
  }

  async lockById(id: string): Promise<App | null> {
    // Only PostgreSQL has row locks; on SQLite the unit of work already runs one writing
    // transaction at a time, and outside a transaction there is nothing to hold a lock.
    if (!this.session.transactional || this.session.dialect !== 'postgres') return this.findById(id);
    const [raw] = await this.session.rows<RawRow>(LOCK_APP, [id]);
    return raw === undefined ? null : toApp(appRowOf(raw));
  }

  async create(app: App): Promise<void> {
    await this.session.guarded(async (manager) => {
      try {
        await manager.insert(this.session.schemas.apps, fromApp(app));
      } catch (error) {
        throw translateUniqueViolation(error);
      }
    });
  }

  async update(app: App): Promise<void> {
    // The uuid and the id stay: children refer to the app by id.
    const { uuid: _uuid, id, ...changes } = fromApp(app);
    await this.session.write((manager) => manager.update(this.session.schemas.apps, { id }, changes));
  }

  async delete(id: string): Promise<void> {
    // Configs, builds, releases, containers, domains and permissions go by ON DELETE CASCADE.
    await this.session.write((manager) => manager.delete(this.session.schemas.apps, { id }));
  }

  async listVisibleTo(username: string | null, slice: Slice): Promise<Page<App>> {
    const end = slice.offset + slice.limit;
    const [rows, counted] = await Promise.all([
      username === null
        ? this.session.rows<RawRow>(PAGE_OF_ALL_APPS, [slice.limit, slice.offset])
        : this.session.rows<RawRow>(PAGE_OF_VISIBLE_APPS, [username, end, username, end, slice.limit, slice.offset]),
      username === null
        ? this.session.rows<RawRow>(COUNT_ALL_APPS, [])
        : this.session.rows<RawRow>(COUNT_VISIBLE_APPS, [username]),
    ]);
    return { count: countOf(counted), items: rows.map((raw) => toApp(appRowOf(raw))) };
  }

  async idsAfter(after: string | null, limit: number): Promise<string[]> {
    const rows = after === null ? await this.session.rows<{ id: string }>(FIRST_APP_IDS, [limit]) : await this.session.rows<{ id: string }>(APP_IDS_AFTER, [after, limit]);
    return rows.map((row) => row.id);
  }

  countOwnedBy(username: string): Promise<number> {
    return this.session.read((manager) => manager.countBy(this.session.schemas.apps, { owner: username }));
  }
}

/** PermissionRepository on TypeORM. */
export class TypeOrmPermissionRepository implements PermissionRepository {
  constructor(private readonly session: Session) {}

  listUsers(app: string): Promise<string[]> {
    return this.session.read(async (manager) => {
      const rows = await manager.find(this.session.schemas.permissions, {
        where: { app },
        order: { username: 'ASC' },
      });
      return rows.map((row) => row.username);
    });
  }

  async has(app: string, username: string): Promise<boolean> {
    return (await this.session.rows(IS_COLLABORATOR, [app, username])).length > 0;
  }

  async grant(app: string, username: string): Promise<void> {
    // A duplicate is ignored by the database itself, so a surrounding transaction stays usable.
    await this.session.write((manager) =>
      manager
        .createQueryBuilder()
        .insert()
        .into(this.session.schemas.permissions)
        .values({ app, username })
        .orIgnore()
        .execute(),
    );
  }

  async revoke(app: string, username: string): Promise<void> {
    await this.session.write((manager) => manager.delete(this.session.schemas.permissions, { app, username }));
  }
}
