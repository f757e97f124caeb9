import { chmodSync, existsSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { readLines, writeLine } from './control-lines';
import type { CertificateStore, ChallengeStore, RequestObserver, ResolvedRoute, RouteTable, RouterLogger, ServedCertificate } from './ports';
import type { FromController, ToController } from './protocol';

/** Options of ControlSocket. */
export interface ControlSocketOptions {
  /** The Unix socket's path; created with mode 0600 (only the router's user may connect). */
  path: string;
  /** The router's listening ports, told to each controller that connects. */
  ports: () => { http: number | null; https: number | null };
  /** Looks the routes in use up again and resolves once every worker has them (RouterCluster.routesChanged). */
  routesChanged: () => Promise<void>;
  /** Forgets cached certificates in every worker (RouterCluster.invalidateCertificate). */
  invalidateCertificate: (serverName?: string) => void;
  logger: RouterLogger;
  /** How long a question to the controller may go unanswered. Default 10 s. */
  askTimeoutMs?: number;
}

type Pending = { resolve: (value: never) => void; reject: (error: Error) => void; timer: ReturnType<typeof setTimeout> };

/** The error every question gets while no controller serves: the router keeps what it knows and answers 503 for the rest. */
export class NoController extends Error {
  constructor() {
    super('no controller is connected to the router');
    this.name = 'NoController';
  }
}

/**
 * The control socket of a router that runs as a process of its own (router-main): the
 * controller connects to it and answers what the workers ask (routes, certificates, ACME
 * challenges) and hears their request figures. One controller serves at a time: a newer
 * connection replaces an older one (an upgrade starts the new controller while the old one
 * may still be stopping), which is told so and does not connect again. Its answers count once it says `ready` (its apps are up);
 * then the router looks every route in use up again and forgets its certificates, so that a
 * controller that connects brings the router fully up to date. While none serves, every
 * question is refused (NoController): the workers keep the routes they have and answer 503
 * for a host name they do not know yet.
 */
export class ControlSocket {
  private server: Server | null = null;
  private current: { socket: Socket; ready: boolean } | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly askTimeoutMs: number;

  /** The route table the router's cluster asks: the connected controller. */
  readonly routes: RouteTable = {
    resolve: (host, fresh) => this.ask<ResolvedRoute | null>((id) => ({ t: 'resolve', id, host, fresh: fresh === true })),
    // Every route, so that the workers hold them all before traffic asks (a controller that cannot list answers an error: names are then looked up one by one).
    list: () => this.ask<Array<[string, ResolvedRoute]>>((id) => ({ t: 'list', id })),
  };
  /** The listing the connected controller sent last: the one it means by `same` (the very same array, so the route cache skips comparing it). */
  private listing: Array<[string, ResolvedRoute]> | null = null;
  /** The certificates, from the connected controller. */
  readonly certificates: CertificateStore = { find: (name) => this.ask<ServedCertificate | null>((id) => ({ t: 'find', id, name })) };
  /** The ACME challenge answers, from the connected controller (null when it has none). */
  readonly challenges: ChallengeStore = { answer: (host, token) => this.ask<string | null>((id) => ({ t: 'challenge', id, host, token })) };
  /** Passes the workers' request figures on to the controller; dropped while none is connected. */
  readonly observer: RequestObserver;

  private batch: Array<[string | null, number, number]> = [];

  constructor(private readonly options: ControlSocketOptions) {
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
    this.observer = {
      request: (app, status, durationMs) => {
        if (this.current?.ready !== true) return;
        // The cluster hands over a worker's batch one request at a time: they leave together.
        if (this.batch.length === 0) queueMicrotask(() => this.flush());
        this.batch.push([app, status, durationMs]);
      },
    };
  }

  /** Whether a controller serves the router now. */
  get serving(): boolean {
    return this.current?.ready === true;
  }

  /**
   * Listens on the socket's path; a socket file left by a router that is gone is replaced.
   * @throws Error when another router answers there, or the path is something else than a socket.
   */
  async listen(): Promise<void> {
    const { path } = this.options;
    if (existsSync(path)) {
      if (!lstatSync(path).isSocket()) throw new Error(`${path} exists and is not a socket`);
      if (await answers(path)) throw new Error(`another router listens on ${path}`);
      unlinkSync(path);
    }
    const server = createServer((socket) => this.accept(socket));
    // Nobody but the router's user may connect, from the moment the socket exists.
    const umask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } finally {
      process.umask(umask);
    }
    chmodSync(path, 0o600);
    this.server = server;
  }

  /** Stops listening and lets the controller go. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.current?.socket.destroy();
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    const previous = this.current;
    const connection = { socket, ready: false };
    this.current = connection;
    // A listing is `same` only to the connection that sent it.
    this.listing = null;
    if (previous !== null) {
      this.options.logger.warn({}, 'another controller connected: it replaces the one before');
      // Told so, the one before does not connect again (two controllers would take turns).
      previous.socket.end(`${JSON.stringify({ t: 'replaced' } satisfies ToController)}\n`);
      setTimeout(() => previous.socket.destroy(), 1000).unref();
    }
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.current !== connection) return;
      this.current = null;
      this.failAll();
      if (connection.ready) this.options.logger.warn({}, 'the controller went away: serving the routes known until one connects again');
    });
    readLines<FromController>(socket, (message) => this.receive(connection, message));
    writeLine(socket, { t: 'hello', ...this.options.ports() } satisfies ToController);
  }

  private receive(connection: { socket: Socket; ready: boolean }, message: FromController): void {
    if (this.current !== connection) return;
    switch (message.t) {
      case 'ready':
        connection.ready = true;
        this.options.logger.info({}, 'a controller serves the router: looking every route up again');
        this.options.invalidateCertificate();
        this.options.routesChanged().catch(() => undefined);
        break;
      case 'sync':
        this.options.routesChanged().then(
          () => writeLine(connection.socket, { t: 'synced', id: message.id } satisfies ToController),
          () => writeLine(connection.socket, { t: 'synced', id: message.id } satisfies ToController),
        );
        break;
      case 'invalidate':
        this.options.invalidateCertificate(message.name);
        break;
      case 'resolved':
        this.settle(message.id, message.route, message.error);
        break;
      case 'listed':
        if (message.routes !== undefined) this.listing = message.routes;
        this.settle(message.id, message.routes ?? (message.same === true ? (this.listing ?? undefined) : undefined), message.error);
        break;
      case 'found':
        this.settle(message.id, message.certificate, message.error);
        break;
      case 'answered':
        this.settle(message.id, message.answer, message.error);
        break;
    }
  }

  private ask<T>(message: (id: number) => ToController): Promise<T> {
    const connection = this.current;
    if (connection === null || !connection.ready) return Promise.reject(new NoController());
    return new Promise<T>((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error('the controller did not answer in time'));
      }, this.askTimeoutMs);
      this.pending.set(id, { resolve: resolve as (value: never) => void, reject, timer });
      writeLine(connection.socket, message(id));
    });
  }

  private settle(id: number, value: unknown, error: string | undefined): void {
    const waiting = this.pending.get(id);
    if (waiting === undefined) return;
    this.pending.delete(id);
    clearTimeout(waiting.timer);
    if (error !== undefined || value === undefined) waiting.reject(new Error(error ?? 'no answer'));
    else waiting.resolve(value as never);
  }

  private failAll(): void {
    for (const [id, waiting] of this.pending) {
      this.pending.delete(id);
      clearTimeout(waiting.timer);
      waiting.reject(new NoController());
    }
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    if (this.current?.ready === true && batch.length > 0) writeLine(this.current.socket, { t: 'observed', batch } satisfies ToController);
  }
}

/** Whether something accepts connections on the Unix socket at `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
