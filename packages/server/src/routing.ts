import type { Certificate, SecretBox, UnitOfWork } from '@svc/core';
import { hostNameOf, type CertificateStore, type ResolvedRoute, type RouteTable, type RouteTarget, type ServedCertificate } from '@svc/router-http';

/** Where an app's processes of one type listen; the process scheduler is one. */
export interface EndpointSource {
  endpoints(app: string, type: string): RouteTarget[] | Promise<RouteTarget[]>;
}

/** Options of PlatformRouteTable. */
export interface PlatformRouteTableOptions {
  /** How long the app of a host name is remembered. Default 1000 ms. */
  cacheMs?: number;
  /** Host names remembered at most. Default 10000. */
  maxCached?: number;
  /** The current time in milliseconds, for tests. */
  now?: () => number;
}

/**
 * The router's routes on the platform: `<app>.<platform domain>` belongs to that app when it
 * exists, any other host name to the app that added it as a domain; the targets are the app's
 * `web` processes that are up (or its `cmd` containers, an image's own command, when it has no `web`), as the scheduler reports them (none with a scheduler that runs
 * nothing). The app of a host name is remembered for a second, so that a busy app does not
 * cost a database read per request; its processes are asked for every time.
 */
export class PlatformRouteTable implements RouteTable {
  private readonly cache = new Map<string, { app: string | null; expires: number }>();
  private readonly suffix: string;
  private readonly cacheMs: number;
  private readonly maxCached: number;
  private readonly now: () => number;

  constructor(
    private readonly uow: UnitOfWork,
    platformDomain: string,
    private readonly processes: EndpointSource | null,
    options: PlatformRouteTableOptions = {},
  ) {
    this.suffix = `.${platformDomain.toLowerCase()}`;
    this.cacheMs = options.cacheMs ?? 1000;
    this.maxCached = options.maxCached ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * The app of the host name (port and case do not matter) with its web processes, or null.
   * @throws Unavailable (as a rejection) when the database cannot be reached.
   */
  async resolve(host: string): Promise<ResolvedRoute | null> {
    const name = hostNameOf(host);
    if (name === null) return null;
    const app = await this.appOf(name);
    if (app === null) return null;
    let targets = this.processes === null ? [] : await this.processes.endpoints(app, 'web');
    // An image deployed without a Procfile runs its own command as the type `cmd`: it serves the app then.
    if (targets.length === 0 && this.processes !== null) targets = await this.processes.endpoints(app, 'cmd');
    return { app, targets: targets.map((target) => ({ host: target.host, port: target.port })) };
  }

  private async appOf(name: string): Promise<string | null> {
    const cached = this.cache.get(name);
    if (cached !== undefined && cached.expires > this.now()) return cached.app;
    const repos = this.uow.repositories;
    let app: string | null = null;
    if (name.endsWith(this.suffix)) {
      const label = name.slice(0, -this.suffix.length);
      // Only `<app>.<domain>`: deeper names under the platform domain belong to no app.
      if (!label.includes('.')) app = (await repos.apps.findById(label))?.id ?? null;
    } else {
      app = (await repos.domains.find(name))?.app ?? null;
    }
    if (this.cache.size >= this.maxCached) this.cache.clear();
    this.cache.set(name, { app, expires: this.now() + this.cacheMs });
    return app;
  }
}

/** Finds the certificate stored under a name whose owner still controls it: the core's CertificateForServerName. */
export interface ServableCertificates {
  execute(name: string): Promise<Certificate | null>;
}

/**
 * The router's certificates: those uploaded through the API, by common name, with the
 * private key unsealed, and only while the name belongs to one of the owner's apps.
 */
export class StoredCertificates implements CertificateStore {
  constructor(
    private readonly certificates: ServableCertificates,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * The certificate whose common name is exactly `serverName` (e.g. `*.example.com`), or
   * null, also when the name is no longer the certificate owner's (see CertificateForServerName).
   * @throws Unavailable (as a rejection) when the database cannot be reached; Error when the key cannot be unsealed.
   */
  async find(serverName: string): Promise<ServedCertificate | null> {
    const stored = await this.certificates.execute(serverName.toLowerCase());
    if (stored === null) return null;
    return { certificate: stored.certificate, key: this.secrets.open(stored.sealedKey) };
  }
}
