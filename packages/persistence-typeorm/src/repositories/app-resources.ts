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
import type { ContainerRow } from '../schema';
import type { Session } from '../session';

/** ConfigRepository on TypeORM. */
export class TypeOrmConfigRepository implements ConfigRepository {
  constructor(private readonly session: Session) {}

  async create(config: Config): Promise<void> {
    await this.session.write((manager) => manager.insert(this.session.schemas.configs, fromConfig(config)));
  }

  findByUuid(uuid: string): Promise<Config | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.configs, { uuid });
      return row === null ? null : toConfig(row);
    });
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

  listForApp(app: string, slice: Slice): Promise<Page<Build>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.builds, {
        where: { app },
        // The uuid breaks ties so that pages never overlap.
        order: { created: 'DESC', uuid: 'DESC' },
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toBuild) };
    });
  }
}

/** ReleaseRepository on TypeORM. */
export class TypeOrmReleaseRepository implements ReleaseRepository {
  constructor(private readonly session: Session) {}

  async create(release: Release): Promise<void> {
    await this.session.guarded(async (manager) => {
      try {
        await manager.insert(this.session.schemas.releases, fromRelease(release));
      } catch (error) {
        if (violatedUniqueConstraint(error) === RELEASE_VERSION_CONSTRAINT) {
          throw new ReleaseVersionTaken(release.app, release.version);
        }
        throw error;
      }
    });
  }

  findByVersion(app: string, version: number): Promise<Release | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.releases, { app, version });
      return row === null ? null : toRelease(row);
    });
  }

  latest(app: string): Promise<Release | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOne(this.session.schemas.releases, { where: { app }, order: { version: 'DESC' } });
      return row === null ? null : toRelease(row);
    });
  }

  listForApp(app: string, slice: Slice): Promise<Page<Release>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.releases, {
        where: { app },
        order: { version: 'DESC' },
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toRelease) };
    });
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

  listForApp(app: string, filter: ContainerFilter = {}): Promise<Container[]> {
    return this.session.read(async (manager) => {
      const rows = await manager.find(this.session.schemas.containers, {
        where: containerWhere(app, filter),
        order: CONTAINER_ORDER,
      });
      return rows.map(toContainer);
    });
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
}
