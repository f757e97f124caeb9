import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { readLines, writeLine } from './control-lines';
import type { CertificateStore, ChallengeStore, RequestObserver, ResolvedRoute, RouteTable, RouterLogger } from './ports';
import type { FromController, ToController } from './protocol';

/** Options of RouterLink. */
export interface RouterLinkOptions {
  /** The router process's control socket. */
  path: string;
  routes: RouteTable;
  certificates?: CertificateStore;
  challenges?: ChallengeStore;
  observer?: RequestObserver;
  logger?: RouterLogger;
  /** How long `listen` waits for the router to answer on its socket. Default 30 s. */
  connectTimeoutMs?: number;
  /** How often a lost connection is tried again. Default 250 ms. */
  retryMs?: number;
}

const silentLogger: RouterLogger = Object.freeze({ info: () => undefined, warn: () => undefined, error: () => undefined });
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The controller's side of a router that runs as a process of its own (router-main.ts):
 * in place of RouterCluster, it connects to the router's control socket and answers what
 * the router asks (routes, certificates, ACME challenges), passing on route changes and
 * certificate invalidations. The router keeps listening when the controller stops, so a
 * controller restart drops no app connection. It answers once `serve()` was called (the
 * apps are up); a lost connection is tried again until `close()`, and each new connection
 * brings the router fully up to date (it looks every route in use up again).
 */
export class RouterLink {
  private socket: Socket | null = null;
  private hello: { http: number | null; https: number | null } | null = null;
  private helloWaiters: Array<() => void> = [];
  private serving = false;
  private closed = false;
  private started = false;
  private nextSync = 1;
  private readonly syncs = new Map<number, () => void>();
  private readonly logger: RouterLogger;
  private retry: ReturnType<typeof setTimeout> | null = null;
  /** The listing last sent on each connection (a new connection is sent the whole listing again). */
  private readonly sentListing = new WeakMap<Socket, ReadonlyArray<[string, ResolvedRoute]>>();

  constructor(private readonly options: RouterLinkOptions) {
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * The router's plain HTTP port: the router process listens where its own configuration
   * says, so `port` and `host` are not used.
   * @throws Error when no router answers on the socket in time, or it has no HTTP listener.
   */
  async listen(_port: number, _host: string): Promise<AddressInfo> {
    const hello = await this.connected();
    if (hello.http === null) throw new Error(`The router at ${this.options.path} has no HTTP listener (its ROUTER_PORT is off)`);
    return { address: '', family: 'IPv4', port: hello.http };
  }

  /**
   * The router's HTTPS port.
   * @throws Error when no router answers on the socket in time, or it has no HTTPS listener.
   */
  async listenTls(_port: number, _host: string): Promise<AddressInfo> {
    const hello = await this.connected();
    if (hello.https === null) throw new Error(`The router at ${this.options.path} has no HTTPS listener (set its ROUTER_TLS_PORT)`);
    return { address: '', family: 'IPv4', port: hello.https };
  }

  /** From now on the router takes this controller's answers; resolves once it has looked every route in use up again. */
  async serve(): Promise<void> {
    await this.connected();
    this.serving = true;
    if (this.socket !== null) writeLine(this.socket, { t: 'ready' } satisfies FromController);
    await this.routesChanged();
  }

  /** Forgets the cached certificate of a server name (or of all) in the router's workers. */
  invalidateCertificate(serverName?: string): void {
    if (this.socket !== null && this.serving) writeLine(this.socket, serverName === undefined ? { t: 'invalidate' } : { t: 'invalidate', name: serverName });
  }

  /** The router looks the routes in use up again; resolves once every worker has them (at once when no router is connected). */
  routesChanged(): Promise<void> {
    const socket = this.socket;
    if (socket === null || !this.serving) return Promise.resolve();
    const id = this.nextSync++;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.syncs.delete(id);
        resolve();
      };
      const timer = setTimeout(done, 10_000);
      this.syncs.set(id, done);
      writeLine(socket, { t: 'sync', id } satisfies FromController);
    });
  }

  /** Lets the router go: it keeps serving the routes it knows until a controller connects again. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const socket = this.socket;
    this.socket = null;
    for (const done of [...this.syncs.values()]) done();
    if (socket !== null) await new Promise<void>((resolve) => socket.end(() => resolve()));
  }

  private connected(): Promise<{ http: number | null; https: number | null }> {
    if (this.hello !== null) return Promise.resolve(this.hello);
    if (!this.started) {
      this.started = true;
      this.connect();
    }
    const timeoutMs = this.options.connectTimeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      const waiter = (): void => {
        clearTimeout(timer);
        resolve(this.hello as { http: number | null; https: number | null });
      };
      const timer = setTimeout(() => {
        this.helloWaiters = this.helloWaiters.filter((w) => w !== waiter);
        reject(new Error(`No router answers on ${this.options.path} (ROUTER_SOCKET) within ${timeoutMs} ms: start the router process first`));
      }, timeoutMs);
      this.helloWaiters.push(waiter);
    });
  }

  private connect(): void {
    if (this.closed) return;
    const socket = connect(this.options.path);
    let open = false;
    socket.on('connect', () => {
      open = true;
      this.socket = socket;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
      for (const done of [...this.syncs.values()]) done();
      if (open && !this.closed) this.logger.warn({ routerSocket: this.options.path }, 'lost the router\'s control socket; connecting again');
      if (!this.closed) this.retry = setTimeout(() => this.connect(), this.options.retryMs ?? 250);
    });
    readLines<ToController>(socket, (message) => this.receive(socket, message));
  }

  private receive(socket: Socket, message: ToController): void {
    switch (message.t) {
      case 'hello': {
        const first = this.hello === null;
        this.hello = { http: message.http, https: message.https };
        for (const waiter of this.helloWaiters.splice(0)) waiter();
        if (!first) this.logger.info({ routerSocket: this.options.path }, 'connected to the router again');
        // A router that restarted, or a connection lost and made again: it takes this controller's answers at once.
        if (this.serving) writeLine(socket, { t: 'ready' } satisfies FromController);
        break;
      }
      case 'resolve':
        this.options.routes.resolve(message.host, message.fresh).then(
          (route) => writeLine(socket, { t: 'resolved', id: message.id, route } satisfies FromController),
          (error: unknown) => writeLine(socket, { t: 'resolved', id: message.id, error: messageOf(error) } satisfies FromController),
        );
        break;
      case 'list': {
        const table = this.options.routes;
        if (table.list === undefined) {
          writeLine(socket, { t: 'listed', id: message.id, error: 'this controller\'s route table cannot list its routes' } satisfies FromController);
          break;
        }
        table.list().then(
          (routes) => {
            // The table gives the very same listing while nothing changed: said in one word, not sent again.
            if (routes === this.sentListing.get(socket)) writeLine(socket, { t: 'listed', id: message.id, same: true } satisfies FromController);
            else {
              this.sentListing.set(socket, routes);
              writeLine(socket, { t: 'listed', id: message.id, routes } satisfies FromController);
            }
          },
          (error: unknown) => writeLine(socket, { t: 'listed', id: message.id, error: messageOf(error) } satisfies FromController),
        );
        break;
      }
      case 'find':
        (this.options.certificates?.find(message.name) ?? Promise.resolve(null)).then(
          (certificate) => writeLine(socket, { t: 'found', id: message.id, certificate } satisfies FromController),
          (error: unknown) => writeLine(socket, { t: 'found', id: message.id, error: messageOf(error) } satisfies FromController),
        );
        break;
      case 'challenge':
        (this.options.challenges?.answer(message.host, message.token) ?? Promise.resolve(null)).then(
          (answer) => writeLine(socket, { t: 'answered', id: message.id, answer } satisfies FromController),
          (error: unknown) => writeLine(socket, { t: 'answered', id: message.id, error: messageOf(error) } satisfies FromController),
        );
        break;
      case 'observed':
        for (const [app, status, durationMs] of message.batch) this.options.observer?.request(app, status, durationMs);
        break;
      case 'synced':
        this.syncs.get(message.id)?.();
        break;
      case 'replaced':
        // Another controller serves the router now: connecting again would take it back.
        this.closed = true;
        this.logger.error({ routerSocket: this.options.path }, 'another controller took over the router: this one no longer serves it');
        break;
    }
  }
}
