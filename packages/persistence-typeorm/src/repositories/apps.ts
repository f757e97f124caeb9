import type { App, AppRepository, Page, PermissionRepository, Slice } from '@svc/core';
import { translateUniqueViolation } from '../constraints';
import { fromApp, toApp } from '../mapping';
import type { Session } from '../session';

/** AppRepository on TypeORM. */
export class TypeOrmAppRepository implements AppRepository {
  constructor(private readonly session: Session) {}

  findById(id: string): Promise<App | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.apps, { id });
      return row === null ? null : toApp(row);
    });
  }

  lockById(id: string): Promise<App | null> {
    // Only PostgreSQL has row locks; on SQLite the unit of work already runs one writing
    // transaction at a time, and outside a transaction there is nothing to hold a lock.
    if (!this.session.transactional || this.session.dialect !== 'postgres') return this.findById(id);
    return this.session.read(async (manager) => {
      const row = await manager.findOne(this.session.schemas.apps, {
        where: { id },
        lock: { mode: 'pessimistic_write' },
      });
      return row === null ? null : toApp(row);
    });
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

  listVisibleTo(username: string | null, slice: Slice): Promise<Page<App>> {
    return this.session.read(async (manager) => {
      const query = manager.createQueryBuilder(this.session.schemas.apps, 'app');
      if (username !== null) {
        const granted = manager
          .createQueryBuilder(this.session.schemas.permissions, 'permission')
          .select('permission.app')
          .where('permission.username = :username');
        query.where(`app.owner = :username OR app.id IN (${granted.getQuery()})`, { username });
      }
      const [rows, count] = await query
        .orderBy('app.id', 'ASC')
        .offset(slice.offset)
        .limit(slice.limit)
        .getManyAndCount();
      return { count, items: rows.map(toApp) };
    });
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

  has(app: string, username: string): Promise<boolean> {
    return this.session.read((manager) => manager.existsBy(this.session.schemas.permissions, { app, username }));
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
