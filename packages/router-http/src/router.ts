import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { SecureContextCache, type SecureContextCacheOptions } from './certificates';
import { ConnectionLimiter } from './limits';
import { challengeToken, httpsLocation } from './challenge';
import type { CertificateStore, ChallengeStore, RequestObserver, ResolvedRoute, RouteTable, RouteTarget, RouterLogger } from './ports';
import { Relay, type Exchanged, type Routing, type Targets } from './relay';
import { RouteCache } from './route-cache';
import { keyOf } from './upstream-pool';

/** Limits on the connections of clients, and how long they may take. */
export interface RouterLimits {
  /** Client connections at most (all listeners); more are refused. Default 10,000. */
  maxConnections?: number;
  /** Client connections from one client at most (an IPv4 address, an IPv6 /64; all listeners); more are refused. Default 256. */
  maxConnectionsPerClient?: number;
  /**
   * The last places of `maxConnections`, given only to clients that hold no connection yet
   * (0 to `maxConnections` - 1). Default 0 (the platform's ROUTER_CONNECTIONS_RESERVED defaults to half).
   */
  reservedConnections?: number;
  /** How long a client may take to complete the TLS handshake and send a request's headers. Default 10 s. */
  headersTimeoutMs?: number;
  /** A client connection with no bytes in either direction for this long is closed (between requests, WebSocket tunnels). Default 60 s. */
  idleTimeoutMs?: number;
}

/** How connections to the apps' processes are kept for reuse. */
export interface UpstreamPoolOptions {
  /** Connections to one process at most; requests beyond wait for one. Default 512. */
  maxSockets?: number;
  /** Idle connections kept per process. Default 128. */
  maxIdleSockets?: number;
  /** An idle kept connection is closed after this long (keep it below the apps' own keep-alive timeout). Default 4 s. */
  idleTimeoutMs?: number;
}

/** Options of AppRouter. */
export interface AppRouterOptions {
  /** Where host names lead; its answers are kept in memory (a RouteCache is used as it is). */
  routes: RouteTable | RouteCache;
  /** How often the routes in use are looked up again when `routes` is not a RouteCache. Default 1000 ms. */
  routeRefreshMs?: number;
  /** Needed to serve HTTPS: certificates are chosen by the TLS server name. */
  certificates?: CertificateStore;
  /** Answers ACME HTTP-01 challenges on plain HTTP (automatic HTTPS); absent: such requests are routed like any other. */
  challenges?: ChallengeStore;
  /** The HTTPS port named in redirects to HTTPS (routes with `httpsRedirect`). Default 443. */
  httpsPort?: number;
  /** Where routed requests and failures are written; nothing is logged without one. */
  logger?: RouterLogger;
  /** How long connecting to a process may take before the next one is tried. Default 5 s. */
  connectTimeoutMs?: number;
  /** How long TLS contexts of server names are kept. */
  certificateCache?: SecureContextCacheOptions;
  /** The share of requests written to the access log, 0 to 1 (answers of 500 and above are always written). Default 1. */
  accessLogSample?: number;
  /** False when the logger drops `info` lines (its level is above): no access log line is made. Default true. */
  accessLog?: boolean;
  /** Hears every request's app, status and duration (metrics). */
  observer?: RequestObserver;
  limits?: RouterLimits;
  upstream?: UpstreamPoolOptions;
}



const silentLogger: RouterLogger = Object.freeze({ info: () => undefined, warn: () => undefined, error: () => undefined });


/** The path of a request URL without its query string, for logs. */
const pathOf = (url: string | undefined): string => (url ?? '/').split('?')[0] ?? '/';

/** How long the fresh lookup of a host name whose app had no process answers for every request. */
const EMPTY_LOOKUP_MS = 250;

/**
 * The platform router: a request whose host name belongs to an app goes to one of the app's
 * web processes, in turn (round robin per app), with `X-Forwarded-For`, `-Proto`, `-Host`
 * and `-Port`; bodies stream both ways and WebSocket upgrades become a tunnel. Routes are
 * held in memory (a RouteCache) and connections to processes are kept for reuse (one
 * keep-alive pool per process). A process that refuses the connection (or does not accept it
 * within the connect timeout) is skipped for the next one, and once all have been tried the
 * route is looked up again, so requests that race a deploy reach the new processes. Requests
 * without a body and with an idempotent method use kept connections, and are sent again on a
 * new one when the kept one turns out closed; the others always get a new connection, so
 * that none is lost to a process closing a kept connection as it stops. Answers, as plain
 * text: 404 for a host name no app has, 503 when no web process is up or none accepts the connection, 502 when a process
 * fails before its answer starts; a process failing in the middle of its answer cuts the
 * client's connection, so the client sees the answer is incomplete. Client connections are
 * limited in number (in all, per client, with places reserved for new clients: limits.ts) and
 * in time (headers, idleness). Every connection goes through the relay (relay.ts).
 */
export class AppRouter {
  private readonly turns = new Map<string, number>();
  /** The last fresh lookup of each host name whose app had no process (`lookAgain`). */
  private readonly emptyLookups = new Map<string, { at: number; route: Promise<ResolvedRoute | null> }>();
  private readonly servers: Server[] = [];
  private readonly logger: RouterLogger;
  private readonly connectTimeoutMs: number;
  private readonly contexts: SecureContextCache | null;
  private readonly routes: RouteCache;
  private readonly ownsRoutes: boolean;
  private readonly sample: number;
  /** Access log lines are made (a logger is given that writes them). */
  private readonly logsAccess: boolean;
  private readonly limiter: ConnectionLimiter;
  private readonly headersTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly relay: Relay;
  private closing = false;
  private preloaded: Promise<void> | null = null;

  constructor(private readonly options: AppRouterOptions) {
    this.logger = options.logger ?? silentLogger;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    this.contexts = options.certificates === undefined ? null : new SecureContextCache(options.certificates, this.logger, options.certificateCache);
    this.ownsRoutes = !(options.routes instanceof RouteCache);
    this.routes = options.routes instanceof RouteCache ? options.routes : new RouteCache(options.routes, { refreshMs: options.routeRefreshMs ?? 1000 });
    this.sample = Math.min(1, Math.max(0, options.accessLogSample ?? 1));
    this.logsAccess = options.logger !== undefined && options.accessLog !== false;
    const limits = options.limits ?? {};
    const maxConnections = limits.maxConnections ?? 10_000;
    this.limiter = new ConnectionLimiter({
      maxConnections,
      maxConnectionsPerAddress: limits.maxConnectionsPerClient ?? 256,
      reservedConnections: Math.min(maxConnections - 1, Math.max(0, limits.reservedConnections ?? 0)),
    });
    this.headersTimeoutMs = limits.headersTimeoutMs ?? 10_000;
    this.idleTimeoutMs = limits.idleTimeoutMs ?? 60_000;
    this.relay = new Relay({
      lookUp: (host, reply, routing) => this.lookUp(host, reply, routing),
      targetsOf: (host, route) => this.targetsOf(host, route),
      challenge: (host, target, secure) => this.challenge(host, target, secure),
      redirect: (host, target, route, secure) => this.redirect(host, target, route, secure),
      finished: (exchanged) => this.relayed(exchanged),
      logger: this.logger,
      connectTimeoutMs: this.connectTimeoutMs,
      idleTimeoutMs: this.idleTimeoutMs,
      headersTimeoutMs: this.headersTimeoutMs,
      pool: { maxSockets: 512, maxIdleSockets: 128, idleTimeoutMs: 4000, ...options.upstream },
    });
  }

  /**
   * Serves a client connection an embedder's own server accepted (a node:net server's
   * `connection`, a node:tls server's `secureConnection`): counted against the connection
   * limits, then relayed like those of the router's listeners.
   */
  readonly handleConnection = (socket: Socket): void => {
    if (this.limiter.admit(socket)) this.relay.accept(socket, (socket as Partial<TLSSocket>).encrypted === true);
    else socket.destroy();
  };

  /** Starts a plain HTTP listener (the relay); port 0 picks a free one. */
  listen(port: number, host: string): Promise<AddressInfo> {
    const server = createNetServer({ allowHalfOpen: true, noDelay: true });
    server.on('connection', this.handleConnection);
    return this.start(server, port, host);
  }

  /**
   * Starts an HTTPS listener that presents, for each TLS server name, the certificate the
   * store has for it (or for its wildcard); a client that sends no server name, or one with
   * no certificate, fails the handshake.
   * @throws Error when the router has no certificate store.
   */
  listenTls(port: number, host: string): Promise<AddressInfo> {
    if (this.contexts === null) throw new Error('Serving HTTPS needs a certificate store');
    const server = createTlsServer({ SNICallback: this.contexts.sniCallback, handshakeTimeout: this.headersTimeoutMs, noDelay: true });
    server.on('connection', (socket: Socket) => {
      if (!this.limiter.admit(socket)) socket.destroy();
    });
    server.on('secureConnection', (socket: TLSSocket) => this.relay.accept(socket, true));
    server.on('tlsClientError', (_error: Error, socket: TLSSocket) => socket.destroy());
    return this.start(server, port, host);
  }

  /** Forgets the cached certificate of a server name (or of all), e.g. after one was replaced. */
  invalidateCertificate(serverName?: string): void {
    this.contexts?.invalidate(serverName);
  }

  /** Looks the routes up again now (all of them when the table can list them), e.g. after a deploy or a domain change; resolves once done. */
  routesChanged(): Promise<void> {
    return this.routes.refresh();
  }

  /**
   * Stops accepting connections, closes WebSocket tunnels, lets requests in flight finish
   * for up to `timeoutMs`, then closes whatever connection is left.
   */
  async close(timeoutMs = 10_000): Promise<void> {
    this.closing = true;
    if (this.ownsRoutes) this.routes.clear(true);
    const servers = this.servers.splice(0);
    const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    await this.relay.close(timeoutMs);
    await Promise.all(closed);
  }

  private async start(server: Server, port: number, host: string): Promise<AddressInfo> {
    // Its own route cache reads the routes (every one, when the table can list them) before the first listener serves.
    if (this.ownsRoutes) {
      this.preloaded ??= this.routes.refresh();
      await this.preloaded;
    }
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.servers.push(server);
    return server.address() as AddressInfo;
  }

  /** The route of the request's host, or an answer already sent (null); synchronous when the route is in memory. */
  private lookUp(host: string | null, reply: (status: number, text: string) => void, routing: Routing): ResolvedRoute | null | Promise<ResolvedRoute | null> {
    if (this.closing) {
      reply(503, 'The router is shutting down.\n');
      return null;
    }
    const known = host === null ? null : this.routes.get(host);
    // A known app with no process (listed before its first process started, say): asked again
    // before answering 503, once for all the requests of a quarter of a second.
    const lookup = known === undefined ? this.routes.resolve(host as string) : known !== null && known.targets.length === 0 ? this.lookAgain(host as string) : null;
    if (lookup === null) return this.checked(host, known as ResolvedRoute | null, reply, routing);
    return lookup.then(
      (route) => this.checked(host, route, reply, routing),
      (error: unknown) => {
        this.logger.error({ host, err: error }, 'route lookup failed');
        reply(503, 'The router cannot look up this address right now; try again shortly.\n');
        return null;
      },
    );
  }

  /** A fresh lookup of a host name whose app had no process, shared by the requests of the next 250 ms. */
  private lookAgain(host: string): Promise<ResolvedRoute | null> {
    const now = Date.now();
    const recent = this.emptyLookups.get(host);
    if (recent !== undefined && now - recent.at < EMPTY_LOOKUP_MS) return recent.route;
    // Bounded: names of apps with no process are few; a flood of them only costs a lookup each per 250 ms.
    if (this.emptyLookups.size >= 10_000) this.emptyLookups.clear();
    const route = this.routes.resolve(host, true);
    route.catch(() => undefined);
    this.emptyLookups.set(host, { at: now, route });
    return route;
  }

  private checked(host: string | null, route: ResolvedRoute | null, reply: (status: number, text: string) => void, routing: Routing): ResolvedRoute | null {
    if (route === null) {
      reply(404, `No app is served at ${host ?? 'this address'}.\n`);
      return null;
    }
    routing.app = route.app;
    if (route.targets.length === 0) {
      reply(503, `No web process of ${route.app} is running.\n`);
      return null;
    }
    return route;
  }

  /**
   * Hands out the route's targets starting with the app's next turn (round robin per app),
   * then those of one fresh lookup that were not tried; null when none is left, with `gone`
   * set when the fresh lookup found no process (or no app) at all. Synchronous until the
   * fresh lookup.
   */
  private targetsOf(host: string, route: ResolvedRoute): Targets {
    // One process (or none): no turn to take, nor to look up among every app's.
    if (route.targets.length <= 1) return new TargetQueue(this.routes, host, route.targets, 0);
    const turn = this.turns.get(route.app) ?? 0;
    this.turns.set(route.app, (turn + 1) % Number.MAX_SAFE_INTEGER);
    return new TargetQueue(this.routes, host, route.targets, turn % Math.max(1, route.targets.length));
  }

  /**
   * Where a plain HTTP request is redirected when its route wants HTTPS; never a request for
   * an ACME challenge (the platform's or the app's own), which must stay reachable over HTTP.
   */
  private redirect(host: string, target: string, route: ResolvedRoute, secure: boolean): string | null {
    if (route.httpsRedirect !== true || secure || challengeToken(target) !== undefined) return null;
    return httpsLocation(host, target, this.options.httpsPort ?? 443);
  }

  /**
   * The answer to an ACME HTTP-01 challenge request on a plain connection, looked up in the
   * challenge store; null when the request is not one. The promise resolves to null when the
   * platform published no answer for it (or the store failed): the request is then routed to
   * the app, whose own ACME client may be waiting for it.
   */
  private challenge(host: string | null, target: string, secure: boolean): Promise<string | null> | null {
    const store = this.options.challenges;
    if (secure || store === undefined) return null;
    const token = challengeToken(target);
    if (token === undefined) return null;
    if (token === null || host === null) return Promise.resolve(null);
    return store.answer(host, token).catch((error: unknown) => {
      this.logger.error({ host, err: error }, 'ACME challenge lookup failed');
      return null;
    });
  }

  /** The access log line (sampled) and the observer's figures of one request of the relay. */
  private relayed(exchanged: Exchanged): void {
    const { status, routing, durationMs } = exchanged;
    this.options.observer?.request(routing.app, status, durationMs);
    if (!this.logsAccess) return;
    if (status < 500 && (this.sample === 0 || (this.sample < 1 && Math.random() >= this.sample))) return;
    this.logger.info(
      {
        host: exchanged.host,
        app: routing.app,
        method: exchanged.method,
        path: pathOf(exchanged.url),
        status,
        target: routing.target,
        attempts: routing.attempts,
        durationMs,
        client: exchanged.client,
        ...(exchanged.aborted ? { aborted: true } : {}),
      },
      'routed',
    );
  }
}

/** The targets of one request, in the order to try them (see `AppRouter.targetsOf`). */
class TargetQueue implements Targets {
  private index = 0;
  private again: RouteTarget[] | null = null;
  private lookedAgain = false;
  private wentAway = false;

  constructor(
    private readonly routes: RouteCache,
    private readonly host: string,
    private readonly targets: readonly RouteTarget[],
    private readonly start: number,
  ) {}

  gone(): boolean {
    return this.wentAway;
  }

  next(): RouteTarget | null | Promise<RouteTarget | null> {
    if (this.again !== null) return this.again[this.index++] ?? null;
    const count = this.targets.length;
    if (this.index < count) return this.targets[(this.start + this.index++) % count] as RouteTarget;
    if (this.lookedAgain) return null;
    this.lookedAgain = true;
    return this.routes
      .resolve(this.host, true)
      .catch(() => undefined)
      .then((route) => {
        this.wentAway = route === null || (route !== undefined && route.targets.length === 0);
        const tried = new Set(this.targets.map(keyOf));
        this.again = (route?.targets ?? []).filter((candidate) => !tried.has(keyOf(candidate)));
        this.index = 0;
        return this.again[this.index++] ?? null;
      });
  }
}

