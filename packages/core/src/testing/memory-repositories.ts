import { AlreadyExists, ReleaseVersionTaken } from '../errors';
import type { App, Build, Config, Container, ContainerState, NewUser, Release, Token, User } from '../model/entities';
import type { Page, Slice } from '../model/pagination';
import type { AppRepository, BuildRepository, ConfigRepository, ContainerFilter, ContainerRepository, LoginFailure, LoginFailureRepository, ReleaseRepository, Repositories, TokenRepository, UserRepository } from '../ports/repositories';
import { deepCopy } from './copy';
import { Context, copyOrNull, page } from './memory-context';
import { MemoryCertificates, MemoryDeploys, MemoryDomains, MemoryKeys, MemoryPermissions } from './memory-resources';

export { Context } from './memory-context';
import { MemoryDeliveries, MemoryEvents, MemoryWebhooks } from './memory-events';
import { compare, type MemoryStore, pair, type Transaction } from './memory-store';

/** Repositories over the committed rows of a MemoryStore, or over one transaction's view of them. */
export function memoryRepositories(store: MemoryStore, transaction: Transaction | null): Repositories {
  const context = new Context(store, transaction);
  return {
    users: new MemoryUsers(context),
    tokens: new MemoryTokens(context),
    loginFailures: new MemoryLoginFailures(context),
    apps: new MemoryApps(context),
    configs: new MemoryConfigs(context),
    builds: new MemoryBuilds(context),
    releases: new MemoryReleases(context),
    containers: new MemoryContainers(context),
    domains: new MemoryDomains(context),
    keys: new MemoryKeys(context),
    permissions: new MemoryPermissions(context),
    certificates: new MemoryCertificates(context),
    deploys: new MemoryDeploys(context),
    events: new MemoryEvents(context),
    webhooks: new MemoryWebhooks(context),
    deliveries: new MemoryDeliveries(context),
  };
}

class MemoryUsers implements UserRepository {
  constructor(private readonly c: Context) {}

  async findByUsername(username: string): Promise<User | null> {
    return copyOrNull(this.c.read().users.get(username));
  }

  async lockByUsername(username: string): Promise<User | null> {
    // Transactions already run one at a time, which is stronger than a row lock.
    return this.findByUsername(username);
  }

  async create(user: NewUser): Promise<User> {
    const tables = this.c.write();
    if (tables.users.has(user.username)) throw new AlreadyExists('username');
    const created: User = { ...deepCopy(user), id: this.c.allocate('user') };
    tables.users.set(created.username, created);
    return deepCopy(created);
  }

  async update(user: User): Promise<void> {
    const tables = this.c.write();
    if (tables.users.has(user.username)) tables.users.set(user.username, user);
  }

  async delete(username: string): Promise<void> {
    const tables = this.c.write();
    tables.tokens.removeWhere((t) => t.username === username);
    tables.keys.removeWhere((k) => k.owner === username);
    tables.certificates.removeWhere((c) => c.owner === username);
    tables.permissions.removeWhere((p) => p.username === username);
    tables.loginFailures.removeWhere((f) => f.username === username);
    tables.users.remove(username);
  }

  async list(slice: Slice): Promise<Page<User>> {
    return page(this.sorted(() => true), slice);
  }

  async listAdmins(slice: Slice): Promise<Page<User>> {
    return page(this.sorted((u) => u.isSuperuser), slice);
  }

  async countAdmins(): Promise<number> {
    return this.c.read().users.filter((u) => u.isSuperuser).length;
  }

  private sorted(predicate: (user: User) => boolean): User[] {
    return this.c.read().users.filter(predicate).sort((a, b) => a.id - b.id);
  }
}

class MemoryTokens implements TokenRepository {
  constructor(private readonly c: Context) {}

  async add(token: Token): Promise<void> {
    const tables = this.c.write();
    // A database would reject the duplicate primary key; hashes of random tokens never collide.
    if (tables.tokens.has(token.hash)) throw new Error('Duplicate token hash');
    tables.tokens.set(token.hash, token);
  }

  async findByHash(hash: string): Promise<Token | null> {
    return copyOrNull(this.c.read().tokens.get(hash));
  }

  async findWithUser(hash: string): Promise<{ token: Token; user: User } | null> {
    const tables = this.c.read();
    const token = tables.tokens.get(hash);
    const user = token === undefined ? undefined : tables.users.get(token.username);
    return token === undefined || user === undefined ? null : { token: deepCopy(token), user: deepCopy(user) };
  }

  async deleteForUser(username: string): Promise<void> {
    this.c.write().tokens.removeWhere((t) => t.username === username);
  }

  async deleteForUserExcept(username: string, keepHash: string): Promise<void> {
    this.c.write().tokens.removeWhere((t) => t.username === username && t.hash !== keepHash);
  }

  async deleteAll(): Promise<void> {
    this.c.write().tokens.removeWhere(() => true);
  }
}

class MemoryLoginFailures implements LoginFailureRepository {
  constructor(private readonly c: Context) {}

  async record(username: string, at: Date, address = ''): Promise<void> {
    const tables = this.c.write();
    tables.loginFailures.set(this.c.allocate('loginFailure'), { username, at, address });
  }

  async recordCounting(username: string, at: Date, address: string, since: Date): Promise<number> {
    await this.record(username, at, address);
    return this.c.read().loginFailures.filter((f) => f.address === address && f.at.getTime() >= since.getTime()).length;
  }

  async recent(username: string, since: Date): Promise<LoginFailure[]> {
    return this.c
      .read()
      .loginFailures.filter((f) => f.username === username && f.at.getTime() >= since.getTime())
      .map((f) => ({ at: new Date(f.at.getTime()), address: f.address }))
      .sort((a, b) => a.at.getTime() - b.at.getTime());
  }

  async since(username: string, since: Date): Promise<Date[]> {
    return this.c
      .read()
      .loginFailures.filter((f) => f.username === username && f.at.getTime() >= since.getTime())
      .map((f) => new Date(f.at.getTime()))
      .sort((a, b) => a.getTime() - b.getTime());
  }

  async clear(username: string, address?: string): Promise<void> {
    this.c.write().loginFailures.removeWhere((f) => f.username === username && (address === undefined || f.address === address));
  }
}

class MemoryApps implements AppRepository {
  constructor(private readonly c: Context) {}

  async findById(id: string): Promise<App | null> {
    return copyOrNull(this.c.read().apps.get(id));
  }

  async lockById(id: string): Promise<App | null> {
    // Transactions already run one at a time, which is stronger than a row lock.
    return this.findById(id);
  }

  async create(app: App): Promise<void> {
    const tables = this.c.write();
    if (tables.apps.has(app.id)) throw new AlreadyExists('id');
    tables.apps.set(app.id, app);
  }

  async update(app: App): Promise<void> {
    const tables = this.c.write();
    if (tables.apps.has(app.id)) tables.apps.set(app.id, app);
  }

  async delete(id: string): Promise<void> {
    const tables = this.c.write();
    const underApp = (row: { app: string }): boolean => row.app === id;
    tables.configs.removeWhere(underApp);
    tables.builds.removeWhere(underApp);
    tables.releases.removeWhere(underApp);
    tables.containers.removeWhere(underApp);
    tables.domains.removeWhere(underApp);
    tables.permissions.removeWhere(underApp);
    tables.apps.remove(id);
  }

  async listVisibleTo(username: string | null, slice: Slice): Promise<Page<App>> {
    const tables = this.c.read();
    const visible = tables.apps
      .filter((a) => username === null || a.owner === username || tables.permissions.has(pair(a.id, username)))
      .sort((a, b) => compare(a.id, b.id));
    return page(visible, slice);
  }

  async idsAfter(after: string | null, limit: number): Promise<string[]> {
    return this.c
      .read()
      .apps.values()
      .map((a) => a.id)
      .filter((id) => after === null || compare(id, after) > 0)
      .sort(compare)
      .slice(0, limit);
  }

  async countOwnedBy(username: string): Promise<number> {
    return this.c.read().apps.filter((a) => a.owner === username).length;
  }
}

class MemoryConfigs implements ConfigRepository {
  constructor(private readonly c: Context) {}

  async create(config: Config): Promise<void> {
    const tables = this.c.write();
    if (tables.configs.has(config.uuid)) throw new Error(`Duplicate config uuid ${config.uuid}`);
    tables.configs.set(config.uuid, config);
  }

  async findByUuid(uuid: string): Promise<Config | null> {
    return copyOrNull(this.c.read().configs.get(uuid));
  }
}

class MemoryBuilds implements BuildRepository {
  constructor(private readonly c: Context) {}

  async create(build: Build): Promise<void> {
    const tables = this.c.write();
    if (tables.builds.has(build.uuid)) throw new Error(`Duplicate build uuid ${build.uuid}`);
    tables.builds.set(build.uuid, build);
  }

  async findByUuid(uuid: string): Promise<Build | null> {
    return copyOrNull(this.c.read().builds.get(uuid));
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Build>> {
    // Builds made within the same millisecond still list newest first: later insertion wins.
    const rows = this.c
      .read()
      .builds.ordered()
      .filter((row) => row.value.app === app)
      .sort((a, b) => b.value.created.getTime() - a.value.created.getTime() || b.seq - a.seq)
      .map((row) => row.value);
    return page(rows, slice);
  }
}

class MemoryReleases implements ReleaseRepository {
  constructor(private readonly c: Context) {}

  async create(release: Release): Promise<void> {
    const tables = this.c.write();
    const key = pair(release.app, release.version);
    if (tables.releases.has(key)) throw new ReleaseVersionTaken(release.app, release.version);
    tables.releases.set(key, release);
  }

  async findByVersion(app: string, version: number): Promise<Release | null> {
    return copyOrNull(this.c.read().releases.get(pair(app, version)));
  }

  async latest(app: string): Promise<Release | null> {
    return copyOrNull(this.newestFirst(app)[0]);
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Release>> {
    return page(this.newestFirst(app), slice);
  }

  private newestFirst(app: string): Release[] {
    return this.c
      .read()
      .releases.filter((r) => r.app === app)
      .sort((a, b) => b.version - a.version);
  }
}

class MemoryContainers implements ContainerRepository {
  constructor(private readonly c: Context) {}

  async create(container: Container): Promise<void> {
    const tables = this.c.write();
    if (tables.containers.has(container.uuid)) throw new Error(`Duplicate container uuid ${container.uuid}`);
    tables.containers.set(container.uuid, container);
  }

  async findByUuid(uuid: string): Promise<Container | null> {
    return copyOrNull(this.c.read().containers.get(uuid));
  }

  async listForApp(app: string, filter: ContainerFilter = {}): Promise<Container[]> {
    return this.matching(app, filter).map(deepCopy);
  }

  async pageForApp(app: string, filter: ContainerFilter, slice: Slice): Promise<Page<Container>> {
    return page(this.matching(app, filter), slice);
  }

  async updateState(uuid: string, state: ContainerState, updated: Date): Promise<void> {
    const tables = this.c.write();
    const container = tables.containers.get(uuid);
    if (container) tables.containers.set(uuid, { ...container, state, updated });
  }

  async delete(uuid: string): Promise<void> {
    this.c.write().containers.remove(uuid);
  }

  private matching(app: string, filter: ContainerFilter): Container[] {
    const wanted = (c: Container): boolean =>
      filter.type !== undefined ? c.type === filter.type : filter.includeRun === true || c.type !== 'run';
    return this.c
      .read()
      .containers.filter((c) => c.app === app && wanted(c))
      .sort((a, b) => a.created.getTime() - b.created.getTime() || compare(a.type, b.type) || a.num - b.num);
  }
}

