import {
  ReleaseVersionTaken,
  type Build,
  type BuildRepository,
  type Config,
  type ConfigRepository,
  type Container,
  type ContainerFilter,
  type ContainerRepository,
  type ContainerState,
  type Domain,
  type DomainRepository,
  type Page,
  type Release,
  type ReleaseRepository,
  type Slice,
} from '@svc/core';
import { Not, type FindOptionsWhere } from 'typeorm';
import { RELEASE_VERSION_CONSTRAINT, translateUniqueViolation, violatedUniqueConstraint } from '../constraints';
import {
  fromBuild,
  fromConfig,
  fromContainer,
  fromDomain,
  fromRelease,
  toBuild,
  toConfig,
  toContainer,
  toDomain,
  toRelease,
} from '../mapping';
import { configRowOf, containerRowOf, countOf, domainRowOf, releaseRowOf, CONFIG_COLUMNS, CONTAINER_COLUMNS, DOMAIN_COLUMNS, RELEASE_COLUMNS, type RawRow } from '../rows';
import type { ContainerRow } from '../schema';
import type { Session } from '../session';
import { ManagerRunner, statement, writeInstant, writeJson } from '../sql';

const INSERT_CONFIG = statement(`INSERT INTO "configs" (${CONFIG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
const FIND_CONFIG = statement(`SELECT ${CONFIG_COLUMNS} FROM "configs" WHERE "uuid" = ?`);
const INSERT_RELEASE = statement(`INSERT INTO "releases" (${RELEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
const FIND_RELEASE = statement(`SELECT ${RELEASE_COLUMNS} FROM "releases" WHERE "app" = ? AND "version" = ?`);
const LATEST_RELEASE = statement(`SELECT ${RELEASE_COLUMNS} FROM "releases" WHERE "app" = ? ORDER BY "version" DESC LIMIT 1`);
const PAGE_OF_RELEASES = statement(`SELECT ${RELEASE_COLUMNS} FROM "releases" WHERE "app" = ? ORDER BY "version" DESC LIMIT ? OFFSET ?`);
// Totals kept by triggers (migration ListCounts): counting the rows would cost every row.
const COUNT_RELEASES = statement('SELECT "releases" AS "n" FROM "app_list_counts" WHERE "app" = ?');
const COUNT_BUILDS = statement('SELECT "builds" AS "n" FROM "app_list_counts" WHERE "app" = ?');
// Keyset pages of every domain along its unique index, without a count: each costs what the first does.
const FIRST_DOMAINS = statement(`SELECT ${DOMAIN_COLUMNS} FROM "domains" ORDER BY "domain" LIMIT ?`);
const DOMAINS_AFTER = statement(`SELECT ${DOMAIN_COLUMNS} FROM "domains" WHERE "domain" > ? ORDER BY "domain" LIMIT ?`);
const CONTAINERS_OF_APP = {
  all: statement(`SELECT ${CONTAINER_COLUMNS} FROM "containers" WHERE "app" = ? ORDER BY "created", "type", "num", "uuid"`),
  ofType: statement(`SELECT ${CONTAINER_COLUMNS} FROM "containers" WHERE "app" = ? AND "type" = ? ORDER BY "created", "type", "num", "uuid"`),
  notRun: statement(`SELECT ${CONTAINER_COLUMNS} FROM "containers" WHERE "app" = ? AND "type" <> ? ORDER BY "created", "type", "num", "uuid"`),
};

/** ConfigRepository on TypeORM. */
export class TypeOrmConfigRepository implements ConfigRepository {
  constructor(private readonly session: Session) {}

  async create(config: Config): Promise<void> {
    const { dialect } = this.session;
    const row = fromConfig(config);
    await this.session.write((manager) =>
      new ManagerRunner(dialect, manager).run(INSERT_CONFIG, [
        row.uuid,
        row.app,
        row.owner,
        writeJson(row.values),
        writeJson(row.memory),
        writeJson(row.cpu),
        writeJson(row.tags),
        writeInstant(dialect, row.created),
        writeInstant(dialect, row.updated),
      ]),
    );
  }

  async findByUuid(uuid: string): Promise<Config | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_CONFIG, [uuid]);
    return raw === undefined ? null : toConfig(configRowOf(raw));
  }
}

/** BuildRepository on TypeORM. */
export class TypeOrmBuildRepository implements BuildRepository {
  constructor(private readonly session: Session) {}

  async create(build: Build): Promise<void> {
    await this.session.write((manager) => manager.insert(this.session.schemas.builds, fromBuild(build)));
  }

  findByUuid(uuid: string): Promise<Build | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.builds, { uuid });
      return row === null ? null : toBuild(row);
    });
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Build>> {
    const [rows, counted] = await Promise.all([
      this.session.read((manager) =>
        manager.find(this.session.schemas.builds, {
          where: { app },
          // The uuid breaks ties so that pages never overlap.
          order: { created: 'DESC', uuid: 'DESC' },
          skip: slice.offset,
          take: slice.limit,
        }),
      ),
      this.session.rows<RawRow>(COUNT_BUILDS, [app]),
    ]);
    return { count: countOf(counted), items: rows.map(toBuild) };
  }
}

/** ReleaseRepository on TypeORM. */
export class TypeOrmReleaseRepository implements ReleaseRepository {
  constructor(private readonly session: Session) {}

  async create(release: Release): Promise<void> {
    const { dialect } = this.session;
    const row = fromRelease(release);
    await this.session.guarded(async (manager) => {
      try {
        await new ManagerRunner(dialect, manager).run(INSERT_RELEASE, [
          row.uuid,
          row.app,
          row.owner,
          row.version,
          row.build,
          row.config,
          row.summary,
          writeInstant(dialect, row.created),
          writeInstant(dialect, row.updated),
        ]);
      } catch (error) {
        if (violatedUniqueConstraint(error) === RELEASE_VERSION_CONSTRAINT) {
          throw new ReleaseVersionTaken(release.app, release.version);
        }
        throw error;
      }
    });
  }

  async findByVersion(app: string, version: number): Promise<Release | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_RELEASE, [app, version]);
    return raw === undefined ? null : toRelease(releaseRowOf(raw));
  }

  async latest(app: string): Promise<Release | null> {
    const [raw] = await this.session.rows<RawRow>(LATEST_RELEASE, [app]);
    return raw === undefined ? null : toRelease(releaseRowOf(raw));
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Release>> {
    const [rows, counted] = await Promise.all([
      this.session.rows<RawRow>(PAGE_OF_RELEASES, [app, slice.limit, slice.offset]),
      this.session.rows<RawRow>(COUNT_RELEASES, [app]),
    ]);
    return { count: countOf(counted), items: rows.map((raw) => toRelease(releaseRowOf(raw))) };
  }
}

const RUN = 'run';

function containerWhere(app: string, filter: ContainerFilter): FindOptionsWhere<ContainerRow> {
  if (filter.type !== undefined) return { app, type: filter.type };
  return filter.includeRun === true ? { app } : { app, type: Not(RUN) };
}

// Oldest first; the uuid breaks the last ties so that pages never overlap.
const CONTAINER_ORDER = { created: 'ASC', type: 'ASC', num: 'ASC', uuid: 'ASC' } as const;

/** ContainerRepository on TypeORM. */
export class TypeOrmContainerRepository implements ContainerRepository {
  constructor(private readonly session: Session) {}

  async create(container: Container): Promise<void> {
    await this.session.write((manager) => manager.insert(this.session.schemas.containers, fromContainer(container)));
  }

  findByUuid(uuid: string): Promise<Container | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.containers, { uuid });
      return row === null ? null : toContainer(row);
    });
  }

  async listForApp(app: string, filter: ContainerFilter = {}): Promise<Container[]> {
    const rows =
      filter.type !== undefined
        ? await this.session.rows<RawRow>(CONTAINERS_OF_APP.ofType, [app, filter.type])
        : filter.includeRun === true
          ? await this.session.rows<RawRow>(CONTAINERS_OF_APP.all, [app])
          : await this.session.rows<RawRow>(CONTAINERS_OF_APP.notRun, [app, RUN]);
    return rows.map((raw) => toContainer(containerRowOf(raw)));
  }

  pageForApp(app: string, filter: ContainerFilter, slice: Slice): Promise<Page<Container>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.containers, {
        where: containerWhere(app, filter),
        order: CONTAINER_ORDER,
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toContainer) };
    });
  }

  async updateState(uuid: string, state: ContainerState, updated: Date): Promise<void> {
    await this.session.write((manager) =>
      manager.update(this.session.schemas.containers, { uuid }, { state, updated: new Date(updated.getTime()) }),
    );
  }

  async delete(uuid: string): Promise<void> {
    await this.session.write((manager) => manager.delete(this.session.schemas.containers, { uuid }));
  }
}

/** DomainRepository on TypeORM. */
export class TypeOrmDomainRepository implements DomainRepository {
  constructor(private readonly session: Session) {}

  find(domain: string): Promise<Domain | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.domains, { domain });
      return row === null ? null : toDomain(row);
    });
  }

  async create(domain: Domain): Promise<void> {
    await this.session.guarded(async (manager) => {
      try {
        await manager.insert(this.session.schemas.domains, fromDomain(domain));
      } catch (error) {
        throw translateUniqueViolation(error);
      }
    });
  }

  async delete(domain: string): Promise<void> {
    await this.session.write((manager) => manager.delete(this.session.schemas.domains, { domain }));
  }

  listForApp(app: string, slice: Slice): Promise<Page<Domain>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.domains, {
        where: { app },
        order: { domain: 'ASC' },
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toDomain) };
    });
  }

  async listAfter(after: string | null, limit: number): Promise<Domain[]> {
    const rows = after === null ? await this.session.rows<RawRow>(FIRST_DOMAINS, [limit]) : await this.session.rows<RawRow>(DOMAINS_AFTER, [after, limit]);
    return rows.map((raw) => toDomain(domainRowOf(raw)));
  }
}
