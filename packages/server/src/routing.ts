import { IMAGE_PROCESS_TYPE, type Certificate, type ContainerSpec, type ContainerState, type RunResult, type RunSpec, type Scheduler, type SecretBox, type TlsName, type TlsStore, type UnitOfWork } from '@svc/core';
import { hostNameOf, wildcardOf, type CertificateStore, type ChallengeStore, type ResolvedRoute, type RouteTable, type RouteTarget, type ServedCertificate } from '@svc/router-http';

/** Where an app's processes of one type listen, with the container of each when known; the process scheduler is one. */
export interface EndpointSource {
  endpoints(app: string, type: string): Array<RouteTarget & { id?: string }> | Promise<Array<RouteTarget & { id?: string }>>;
}

/**
 * The containers being stopped, which the router must stop sending requests to before they
 * are told to stop: shared by DrainingScheduler and PlatformRouteTable.
 */
export class LeavingContainers {
  readonly ids = new Set<string>();
  /** Brings the router's routes (in every worker) up to date; set once the router exists. */
  refreshRoutes: () => Promise<void> = async () => undefined;
}

/**
 * A scheduler that, before stopping a container, takes it out of the router's routes and
 * waits until every router worker has the new routes: a process being stopped is then sent
 * no new connection, which it could accept and drop as it closes (a request lost).
 */
export class DrainingScheduler implements Scheduler {
  /** The inner scheduler's whole-type step, when it has one (stops still go through `stop`). */
  readonly rollType?: Scheduler['rollType'];
  readonly concurrentStarts?: number;
  /** The inner scheduler's check of a build before a rollback, when it has one. */
  readonly checkRunnable?: Scheduler['checkRunnable'];

  constructor(
    /** The scheduler that runs the containers. */
    readonly inner: Scheduler,
    private readonly leaving: LeavingContainers,
  ) {
    const step = inner.rollType;
    if (step !== undefined) this.rollType = (specs, replacing) => step.call(inner, specs, replacing);
    if (inner.concurrentStarts !== undefined) this.concurrentStarts = inner.concurrentStarts;
    const check = inner.checkRunnable;
    if (check !== undefined) this.checkRunnable = (build) => check.call(inner, build);
  }

  start(spec: ContainerSpec): Promise<ContainerState> {
    return this.inner.start(spec);
  }

  async stop(id: string): Promise<void> {
    this.leaving.ids.add(id);
    try {
      await this.leaving.refreshRoutes().catch(() => undefined);
      await this.inner.stop(id);
    } finally {
      this.leaving.ids.delete(id);
    }
  }

  run(spec: RunSpec): Promise<RunResult> {
    return this.inner.run(spec);
  }

  states(ids: string[]): Promise<Map<string, ContainerState>> {
    return this.inner.states(ids);
  }
}

/** Options of PlatformRouteTable. */
export interface PlatformRouteTableOptions {
  /** How long the names of every route are remembered for `list()` (`forget()` clears them at once). Default 30000 ms. */
  listCacheMs?: number;
  /** How long the app of a host name is remembered (`forget()` clears it at once). Default 5000 ms. */
  cacheMs?: number;
  /** Host names remembered at most. Default 10000. */
  maxCached?: number;
  /** The current time in milliseconds, for tests. */
  now?: () => number;
  /** Whether plain HTTP for a host name of an app is redirected to HTTPS (the core's HttpsRedirectFor); absent: never. */
  redirects?: { execute(app: string, host: string): Promise<boolean> };
  /**
   * The apps that redirect plain HTTP at all (TlsStore.httpsRedirectApps), so that listing every
   * route asks `redirects` only about their host names; absent: about every host name.
   */
  redirectingApps?: () => Promise<string[]>;
}

/** Apps and domains read per query when every route is listed. */
export const ROUTE_LIST_PAGE = 1000;

/**
 * Every item of a listing read in keyset pages of ROUTE_LIST_PAGE, each starting after the key
 * of the last item of the one before: 100,000s of rows cost pages as cheap as the first.
 */
async function everyPage<T>(page: (after: string | null, limit: number) => Promise<T[]>, keyOf: (item: T) => string): Promise<T[]> {
  const items: T[] = [];
  for (let after: string | null = null; ; ) {
    const read = await page(after, ROUTE_LIST_PAGE);
    items.push(...read);
    const last = read[read.length - 1];
    if (read.length < ROUTE_LIST_PAGE || last === undefined) return items;
    after = keyOf(last);
  }
}

const sameTargets = (a: readonly RouteTarget[], b: readonly RouteTarget[]): boolean =>
  a.length === b.length && a.every((target, i) => target.host === b[i]?.host && target.port === b[i]?.port);

/** A host name of the listing and what it leads to. */
interface ListedName {
  host: string;
  app: string;
  redirect: boolean;
}

/** The listing's routes: each name with its app's processes. */
function routesOf(names: readonly ListedName[], targets: ReadonlyMap<string, RouteTarget[]>): Array<[string, ResolvedRoute]> {
  return names.map(({ host, app, redirect }) => [host, { app, ...(redirect ? { httpsRedirect: true } : {}), targets: targets.get(app) ?? [] }]);
}

/**
 * The router's routes on the platform: `<app>.<platform domain>` belongs to that app when it
 * exists, any other host name to the app that added it as a domain; the targets are the app's
 * `web` processes that are up (or its `cmd` containers, an image's own command, when it has
 * no `web`), as the scheduler reports them (none with a scheduler that runs nothing). The
 * router holds every route in memory (`list()`, read before it serves) and asks again about
 * once a second; the apps of the host names are remembered here for a few seconds more (until
 * `forget()`, which the server calls when routes changed), so that those refreshes cost few
 * database reads; the processes are asked for every time, from the scheduler's memory.
 */
export class PlatformRouteTable implements RouteTable {
  private readonly cache = new Map<string, { app: string | null; redirect: boolean; expires: number }>();
  private readonly suffix: string;
  private readonly cacheMs: number;
  private readonly listCacheMs: number;
  private readonly maxCached: number;
  private readonly now: () => number;
  private readonly redirects: PlatformRouteTableOptions['redirects'];
  private readonly redirectingApps: PlatformRouteTableOptions['redirectingApps'];
  /** Every host name with its app, as last read for `list()`. */
  private names: { listed: ListedName[]; expires: number } | null = null;
  /** Apps whose processes an API write may have changed since the last listing (`forget(true, apps)`). */
  private changedApps: Set<string> | null = null;
  /** The last answer of `list()`, given again while nothing changed. */
  private lastListing: { names: ListedName[]; targets: Map<string, RouteTarget[]>; routes: Array<[string, ResolvedRoute]> } | null = null;

  constructor(
    private readonly uow: UnitOfWork,
    platformDomain: string,
    private readonly processes: EndpointSource | null,
    options: PlatformRouteTableOptions = {},
    private readonly leaving: LeavingContainers | null = null,
  ) {
    this.suffix = `.${platformDomain.toLowerCase()}`;
    this.cacheMs = options.cacheMs ?? 5000;
    this.listCacheMs = options.listCacheMs ?? 30_000;
    this.maxCached = options.maxCached ?? 10_000;
    this.now = options.now ?? Date.now;
    this.redirects = options.redirects;
    this.redirectingApps = options.redirectingApps;
  }

  /**
   * Forgets which app the host names belong to, e.g. after a domain was added or an app
   * deleted; with `processesOnly` (a change that cannot touch any host name: a config change,
   * a deploy, a scale) the names are kept and only the processes are asked again, which the
   * listing does every time anyway.
   */
  forget(processesOnly = false, apps?: Iterable<string>): void {
    if (processesOnly) {
      // The next listing asks only these apps for their processes (the periodic ones ask every app).
      if (apps !== undefined) for (const app of apps) (this.changedApps ??= new Set()).add(app);
      return;
    }
    this.cache.clear();
    this.names = null;
    this.changedApps = null;
  }

  /**
   * The app of the host name (port and case do not matter) with its web processes, or null.
   * @throws Unavailable (as a rejection) when the database cannot be reached.
   */
  async resolve(host: string): Promise<ResolvedRoute | null> {
    const name = hostNameOf(host);
    if (name === null) return null;
    const found = await this.appOf(name);
    if (found === null) return null;
    const { app, redirect } = found;
    return { app, ...(redirect ? { httpsRedirect: true } : {}), targets: await this.targetsOf(app) };
  }

  /**
   * Every route: `<app>.<platform domain>` of every app and every domain added, with the app's
   * processes as `resolve` gives them. The host names come from a few set-based reads (pages of
   * apps and of domains, the apps redirecting to HTTPS), remembered like `resolve`'s answers.
   * While neither the names nor any app's processes changed, the very same array is given
   * again (not to be modified), which spares the caller comparing it route by route.
   * @throws Unavailable (as a rejection) when the database cannot be reached.
   */
  async list(): Promise<Array<[host: string, route: ResolvedRoute]>> {
    const names = this.names !== null && this.names.expires > this.now() ? this.names.listed : await this.readNames();
    // Most listings (once a second) find what the last one found: the same answer, not 10,000s of new objects.
    const last = this.lastListing !== null && this.lastListing.names === names ? this.lastListing : null;
    const changedApps = this.changedApps;
    this.changedApps = null;
    // After API writes that changed no name (config changes, deploys): only their apps are asked,
    // so that a stream of writes does not walk every route for each one.
    if (last !== null && changedApps !== null) return this.relisted(last, changedApps);
    const targets = new Map<string, RouteTarget[]>();
    let changed = last === null;
    for (const { app } of names) {
      if (targets.has(app)) continue;
      // The scheduler's memory answers at once: no await (a promise each) for every one of 10,000s of apps.
      const found = this.targetsOf(app);
      const current = found instanceof Promise ? await found : found;
      const before = last?.targets.get(app);
      if (before !== undefined && sameTargets(before, current)) targets.set(app, before);
      else {
        targets.set(app, current);
        changed = true;
      }
    }
    if (!changed && last !== null) return last.routes;
    const routes = routesOf(names, targets);
    this.lastListing = { names, targets, routes };
    return routes;
  }

  /** The last listing with the processes of `apps` asked again: the very same one when none changed. */
  private async relisted(last: NonNullable<PlatformRouteTable['lastListing']>, apps: ReadonlySet<string>): Promise<Array<[string, ResolvedRoute]>> {
    let changed = false;
    for (const app of apps) {
      const before = last.targets.get(app);
      if (before === undefined) continue;
      const found = this.targetsOf(app);
      const current = found instanceof Promise ? await found : found;
      if (sameTargets(before, current)) continue;
      last.targets.set(app, current);
      changed = true;
    }
    if (!changed) return last.routes;
    const routes = routesOf(last.names, last.targets);
    this.lastListing = { ...last, routes };
    return routes;
  }

  private async readNames(): Promise<ListedName[]> {
    const repos = this.uow.repositories;
    const listed: ListedName[] = [];
    // Only the ids of the apps are read.
    for (const id of await everyPage((after, limit) => repos.apps.idsAfter(after, limit), (id) => id)) {
      listed.push({ host: `${id}${this.suffix}`.toLowerCase(), app: id, redirect: false });
    }
    for (const domain of await everyPage((after, limit) => repos.domains.listAfter(after, limit), (domain) => domain.domain)) {
      listed.push({ host: domain.domain.toLowerCase(), app: domain.app, redirect: false });
    }
    const redirects = this.redirects;
    if (redirects !== undefined) {
      const apps = this.redirectingApps === undefined ? null : new Set(await this.redirectingApps());
      for (const name of listed) if (apps === null || apps.has(name.app)) name.redirect = await redirects.execute(name.app, name.host);
    }
    // Read again after `forget()` (this process changed a name) or after the listing's time, which
    // bounds how long another controller process's change of a name goes unseen in the listing
    // (a name not listed is still looked up one by one). Reading every name is the costly part.
    this.names = { listed, expires: this.now() + this.listCacheMs };
    return listed;
  }

  /**
   * The app's `web` processes that are up and not leaving (its `cmd` ones when it has no
   * `web`); without a promise when the scheduler answers at once (its memory), so that a
   * listing of 10,000s of apps makes no promise for each.
   */
  private targetsOf(app: string): RouteTarget[] | Promise<RouteTarget[]> {
    const processes = this.processes;
    if (processes === null) return [];
    const chosen = (web: Array<RouteTarget & { id?: string }>): RouteTarget[] | Promise<RouteTarget[]> => {
      if (web.length > 0) return this.notLeaving(web);
      // An image deployed without a Procfile runs its own command as the type `cmd`: it serves the app then.
      const own = processes.endpoints(app, IMAGE_PROCESS_TYPE);
      return own instanceof Promise ? own.then((found) => this.notLeaving(found)) : this.notLeaving(own);
    };
    const web = processes.endpoints(app, 'web');
    return web instanceof Promise ? web.then(chosen) : chosen(web);
  }

  private notLeaving(targets: Array<RouteTarget & { id?: string }>): RouteTarget[] {
    const leaving = this.leaving?.ids;
    return targets.filter((target) => target.id === undefined || leaving === undefined || !leaving.has(target.id)).map((target) => ({ host: target.host, port: target.port }));
  }

  private async appOf(name: string): Promise<{ app: string; redirect: boolean } | null> {
    const cached = this.cache.get(name);
    if (cached !== undefined && cached.expires > this.now()) return cached.app === null ? null : { app: cached.app, redirect: cached.redirect };
    const repos = this.uow.repositories;
    let app: string | null = null;
    if (name.endsWith(this.suffix)) {
      const label = name.slice(0, -this.suffix.length);
      // Only `<app>.<domain>`: deeper names under the platform domain belong to no app.
      if (!label.includes('.')) app = (await repos.apps.findById(label))?.id ?? null;
    } else {
      app = (await repos.domains.find(name))?.app ?? null;
    }
    const redirect = app !== null && this.redirects !== undefined && (await this.redirects.execute(app, name));
    if (this.cache.size >= this.maxCached) this.cache.clear();
    this.cache.set(name, { app, redirect, expires: this.now() + this.cacheMs });
    return app === null ? null : { app, redirect };
  }
}

/** Finds the certificate stored under a name whose owner still controls it: the core's CertificateForServerName. */
export interface ServableCertificates {
  execute(name: string): Promise<Certificate | null>;
}

/** Finds the certificate issued over ACME for a name while it still belongs to its app: the core's IssuedCertificateFor. */
export interface IssuedCertificates {
  execute(name: string): Promise<TlsName | null>;
}

/**
 * The router's certificates: those uploaded through the API, by common name, with the
 * private key unsealed, and only while the name belongs to one of the owner's apps; then,
 * for a host name no uploaded certificate covers (exactly or by its wildcard), the one
 * issued over ACME. An uploaded certificate always wins.
 */
export class StoredCertificates implements CertificateStore {
  constructor(
    private readonly certificates: ServableCertificates,
    private readonly secrets: SecretBox,
    private readonly issued: IssuedCertificates | null = null,
  ) {}

  /**
   * The certificate whose common name is exactly `serverName` (e.g. `*.example.com`), or
   * null, also when the name is no longer the certificate owner's (see CertificateForServerName).
   * @throws Unavailable (as a rejection) when the database cannot be reached; Error when the key cannot be unsealed.
   */
  async find(serverName: string): Promise<ServedCertificate | null> {
    const name = serverName.toLowerCase();
    const stored = await this.certificates.execute(name);
    if (stored !== null) return { certificate: stored.certificate, key: this.secrets.open(stored.sealedKey) };
    if (this.issued === null || name.startsWith('*.')) return null;
    const wildcard = wildcardOf(name);
    // An uploaded wildcard wins too: answering null here makes the router ask for it next.
    if (wildcard !== null && (await this.certificates.execute(wildcard)) !== null) return null;
    const issued = await this.issued.execute(name);
    if (issued === null || issued.certificate === null || issued.sealedKey === null) return null;
    return { certificate: issued.certificate, key: this.secrets.open(issued.sealedKey) };
  }
}

/** The answers to ACME HTTP-01 challenges, from the shared TLS store: every controller process's router answers those of any. */
export class StoredChallenges implements ChallengeStore {
  constructor(private readonly tls: TlsStore) {}

  answer(host: string, token: string): Promise<string | null> {
    return this.tls.challenge(token, host);
  }
}
