/** Where one web process of an app listens. */
export interface RouteTarget {
  host: string;
  port: number;
}

/** The app a host name belongs to and the addresses of its web processes that are up. */
export interface ResolvedRoute {
  app: string;
  /** Empty when no web process of the app is up: the router answers 503. */
  targets: RouteTarget[];
  /** Plain HTTP requests for this host name are answered with a 308 to HTTPS (the ACME challenge path excepted). */
  httpsRedirect?: boolean;
}

/** Tells the router which app serves a host name, and where its web processes listen. */
export interface RouteTable {
  /**
   * The route of a host name (lower case, without port or trailing dot), or null when no
   * app is served there (the router answers 404). A rejection makes the router answer 503.
   * `fresh` is set when the router found every process it knew gone: nothing cached will do.
   */
  resolve(host: string, fresh?: boolean): Promise<ResolvedRoute | null>;
  /**
   * Every route there is, host names as `resolve` takes them (optional). A table that can list
   * has the router know every route before traffic arrives, as a proxy holding its routes in its
   * configuration does; host names not listed are still asked for with `resolve`. A rejection
   * keeps the routes known. Called at start and with every refresh, so it should cost a few
   * set-based reads, not one per route; when nothing changed it may give the very same array
   * as last time (not to be modified), which spares comparing it route by route.
   */
  list?(): Promise<Array<[host: string, route: ResolvedRoute]>>;
}

/** A certificate chain and its private key, both PEM. */
export interface ServedCertificate {
  certificate: string;
  key: string;
}

/** Gives the router the certificate to present for a TLS server name. */
export interface CertificateStore {
  /**
   * The certificate stored under exactly this name: a host name such as `www.example.com`,
   * or a wildcard name such as `*.example.com` (the router asks for both); null if none.
   */
  find(serverName: string): Promise<ServedCertificate | null>;
}

/** Gives the router the answers to ACME HTTP-01 challenges (`/.well-known/acme-challenge/<token>`). */
export interface ChallengeStore {
  /** The key authorization to answer for the token on this host name, or null (the router answers 404). */
  answer(host: string, token: string): Promise<string | null>;
}

/** The structured logger the router writes to; pino's logger satisfies it. */
export interface RouterLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Hears each request the router answered, e.g. to keep per-app request counts and latency for metrics. */
export interface RequestObserver {
  /** `app` is null when the host name belongs to no app; `durationMs` runs from the request to the end of its answer. */
  request(app: string | null, status: number, durationMs: number): void;
}
