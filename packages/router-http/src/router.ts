import { STATUS_CODES, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { SecureContextCache, type SecureContextCacheOptions } from './certificates';
import { endToEnd, forwardedHeaders, withoutBody } from './headers';
import { hostNameOf } from './host';
import type { CertificateStore, ResolvedRoute, RouteTable, RouteTarget, RouterLogger } from './ports';

/** Options of AppRouter. */
export interface AppRouterOptions {
  routes: RouteTable;
  /** Needed to serve HTTPS: certificates are chosen by the TLS server name. */
  certificates?: CertificateStore;
  /** Where routed requests and failures are written; nothing is logged without one. */
  logger?: RouterLogger;
  /** How long connecting to a process may take before the next one is tried. Default 5 s. */
  connectTimeoutMs?: number;
  /** How long TLS contexts of server names are kept. */
  certificateCache?: SecureContextCacheOptions;
}

const silentLogger: RouterLogger = Object.freeze({ info: () => undefined, warn: () => undefined, error: () => undefined });

/** What one request's log line says about its routing. */
interface Routing {
  app: string | null;
  target: string | null;
  attempts: number;
}

const keyOf = (target: RouteTarget): string => `${target.host}:${target.port}`;

/** The path of a request URL without its query string, for logs. */
const pathOf = (url: string | undefined): string => (url ?? '/').split('?')[0] ?? '/';

/**
 * The platform router: a request whose host name belongs to an app goes to one of the app's
 * web processes, in turn (round robin per app), with `X-Forwarded-For`, `-Proto`, `-Host`
 * and `-Port`; bodies stream both ways and WebSocket upgrades become a tunnel. A process that
 * refuses the connection (or does not accept it within the connect timeout) is skipped for
 * the next one, and once all have been tried the route is looked up again, so requests that
 * race a deploy reach the new processes. Answers, as plain text: 404 for a host name no app
 * has, 503 when no web process is up or none accepts the connection, 502 when a process fails
 * before its answer starts; a process failing in the middle of its answer cuts the client's
 * connection, so the client sees the answer is incomplete.
 */
export class AppRouter {
  private readonly turns = new Map<string, number>();
  private readonly servers: Server[] = [];
  /** Client and process sockets of WebSocket tunnels, closed with the router. */
  private readonly tunnels = new Set<Duplex>();
  private readonly logger: RouterLogger;
  private readonly connectTimeoutMs: number;
  private readonly contexts: SecureContextCache | null;
  private closing = false;

  constructor(private readonly options: AppRouterOptions) {
    this.logger = options.logger ?? silentLogger;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    this.contexts = options.certificates === undefined ? null : new SecureContextCache(options.certificates, this.logger, options.certificateCache);
  }

  /** Handles one request of an HTTP or HTTPS server, e.g. one the embedder created. */
  readonly handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    void this.route(req, res, isEncrypted(req.socket));
  };

  /** Handles the `upgrade` event of an HTTP or HTTPS server (WebSocket handshakes). */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    void this.upgrade(req, socket, head, isEncrypted(req.socket));
  };

  /** Starts a plain HTTP listener; port 0 picks a free one. */
  listen(port: number, host: string): Promise<AddressInfo> {
    return this.start(createServer(), port, host);
  }

  /**
   * Starts an HTTPS listener that presents, for each TLS server name, the certificate the
   * store has for it (or for its wildcard); a client that sends no server name, or one with
   * no certificate, fails the handshake.
   * @throws Error when the router has no certificate store.
   */
  listenTls(port: number, host: string): Promise<AddressInfo> {
    if (this.contexts === null) throw new Error('Serving HTTPS needs a certificate store');
    return this.start(createHttpsServer({ SNICallback: this.contexts.sniCallback }), port, host);
  }

  /** Forgets the cached certificate of a server name (or of all), e.g. after one was replaced. */
  invalidateCertificate(serverName?: string): void {
    this.contexts?.invalidate(serverName);
  }

  /**
   * Stops accepting connections, closes WebSocket tunnels, lets requests in flight finish
   * for up to `timeoutMs`, then closes whatever connection is left.
   */
  async close(timeoutMs = 10_000): Promise<void> {
    this.closing = true;
    for (const socket of this.tunnels) socket.destroy();
    const servers = this.servers.splice(0);
    const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    for (const server of servers) server.closeIdleConnections();
    const timer = setTimeout(() => {
      for (const server of servers) server.closeAllConnections();
    }, timeoutMs);
    await Promise.all(closed);
    clearTimeout(timer);
  }

  private async start(server: Server, port: number, host: string): Promise<AddressInfo> {
    server.on('request', this.handleRequest);
    server.on('upgrade', this.handleUpgrade);
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

  /** The route of the request's host, or an answer already sent (null). */
  private async lookUp(host: string | null, reply: (status: number, text: string) => void, routing: Routing): Promise<ResolvedRoute | null> {
    if (this.closing) {
      reply(503, 'The router is shutting down.\n');
      return null;
    }
    let route: ResolvedRoute | null;
    try {
      route = host === null ? null : await this.options.routes.resolve(host);
    } catch (error) {
      this.logger.error({ host, err: error }, 'route lookup failed');
      reply(503, 'The router cannot look up this address right now; try again shortly.\n');
      return null;
    }
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

  /** The route's targets starting with the app's next turn. */
  private rotation(route: ResolvedRoute): RouteTarget[] {
    const turn = this.turns.get(route.app) ?? 0;
    this.turns.set(route.app, (turn + 1) % Number.MAX_SAFE_INTEGER);
    const start = turn % route.targets.length;
    return [...route.targets.slice(start), ...route.targets.slice(0, start)];
  }

  /**
   * Hands out targets in turn, then those of one fresh lookup that were not tried; resolves
   * to null when none is left.
   */
  private targetsOf(host: string, route: ResolvedRoute): () => Promise<RouteTarget | null> {
    let queue = this.rotation(route);
    const tried = new Set<string>();
    let lookedAgain = false;
    return async () => {
      let target = queue.shift();
      if (target === undefined && !lookedAgain) {
        lookedAgain = true;
        const again = await this.options.routes.resolve(host).catch(() => null);
        queue = (again?.targets ?? []).filter((candidate) => !tried.has(keyOf(candidate)));
        target = queue.shift();
      }
      if (target === undefined) return null;
      tried.add(keyOf(target));
      return target;
    };
  }

  private async route(req: IncomingMessage, res: ServerResponse, secure: boolean): Promise<void> {
    const started = process.hrtime.bigint();
    const host = hostNameOf(req.headers.host);
    const routing: Routing = { app: null, target: null, attempts: 0 };
    res.once('close', () => {
      this.logger.info(
        {
          host,
          app: routing.app,
          method: req.method,
          path: pathOf(req.url),
          status: res.statusCode,
          target: routing.target,
          attempts: routing.attempts,
          durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        'routed',
      );
    });
    const reply = (status: number, text: string): void => plainAnswer(req, res, status, text);
    const route = await this.lookUp(host, reply, routing);
    if (route === null || host === null) return;
    this.forward(req, res, secure, this.targetsOf(host, route), routing);
  }

  private forward(req: IncomingMessage, res: ServerResponse, secure: boolean, nextTarget: () => Promise<RouteTarget | null>, routing: Routing): void {
    const bodyless = withoutBody(req);
    let current: ReturnType<typeof httpRequest> | null = null;
    // The client went away: so does the request to its process.
    res.once('close', () => {
      if (!res.writableFinished) current?.destroy();
    });
    if (bodyless) req.resume();

    const tryNext = async (): Promise<void> => {
      const target = await nextTarget();
      if (res.destroyed) return;
      if (target === null) {
        plainAnswer(req, res, 503, `No web process of ${routing.app ?? 'this app'} accepted the connection.\n`);
        return;
      }
      attempt(target);
    };

    const attempt = (target: RouteTarget): void => {
      routing.target = keyOf(target);
      routing.attempts += 1;
      let connected = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const upstream = httpRequest({
        host: target.host,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: forwardedHeaders(req, secure),
        // One connection per request: a process being stopped is never sent a request on a
        // connection it is closing, and its graceful stop is not held up by idle connections.
        agent: false,
      });
      current = upstream;
      upstream.once('socket', (socket: Socket) => {
        // The body is sent only once connected, so that a refused connection leaves it unread for the next process.
        const send = (): void => {
          connected = true;
          clearTimeout(timer);
          if (bodyless) upstream.end();
          else req.pipe(upstream);
        };
        if (!socket.connecting) {
          send();
          return;
        }
        timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), this.connectTimeoutMs);
        socket.once('connect', send);
      });
      upstream.once('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        answer.pipe(res);
        const cut = (): void => {
          if (!answer.complete) res.destroy();
        };
        answer.once('error', cut);
        answer.once('close', cut);
      });
      upstream.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (res.headersSent) {
          res.destroy();
          return;
        }
        if (res.destroyed) return;
        // Nothing reached a process that was never connected: any request may go to the next one.
        if (!connected) {
          void tryNext();
          return;
        }
        this.logger.warn({ app: routing.app, target: routing.target, code: error.code, reason: error.message }, 'app process failed to answer');
        plainAnswer(req, res, 502, `Bad gateway: the web process of ${routing.app ?? 'this app'} failed to answer.\n`);
      });
    };

    void tryNext();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, secure: boolean): Promise<void> {
    this.track(socket);
    const host = hostNameOf(req.headers.host);
    const routing: Routing = { app: null, target: null, attempts: 0 };
    const reply = (status: number, text: string): void => rawAnswer(socket, status, text);
    const route = await this.lookUp(host, reply, routing);
    if (route === null || host === null) return;
    const nextTarget = this.targetsOf(host, route);
    let current: ReturnType<typeof httpRequest> | null = null;
    let tunnelled = false;
    socket.once('close', () => {
      if (!tunnelled) current?.destroy();
    });

    const tryNext = async (): Promise<void> => {
      const target = await nextTarget();
      if (socket.destroyed) return;
      if (target === null) {
        rawAnswer(socket, 503, `No web process of ${route.app} accepted the connection.\n`);
        return;
      }
      attempt(target);
    };

    const attempt = (target: RouteTarget): void => {
      routing.target = keyOf(target);
      let connected = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const upstream = httpRequest({
        host: target.host,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: forwardedHeaders(req, secure, true),
        agent: false,
      });
      current = upstream;
      upstream.once('socket', (raw: Socket) => {
        if (!raw.connecting) {
          connected = true;
          return;
        }
        timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), this.connectTimeoutMs);
        raw.once('connect', () => {
          connected = true;
          clearTimeout(timer);
        });
      });
      upstream.once('upgrade', (answer: IncomingMessage, processSocket: Socket, processHead: Buffer) => {
        tunnelled = true;
        this.track(processSocket);
        socket.write(responseHead(answer, false));
        if (processHead.length > 0) socket.write(processHead);
        if (head.length > 0) processSocket.write(head);
        processSocket.pipe(socket);
        socket.pipe(processSocket);
        processSocket.once('close', () => socket.destroy());
        socket.once('close', () => processSocket.destroy());
      });
      upstream.once('response', (answer) => {
        // The process declined the upgrade: its answer goes back as it is, then the connection closes.
        socket.write(responseHead(answer, true));
        answer.pipe(socket);
      });
      upstream.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (socket.destroyed) return;
        if (!connected) {
          void tryNext();
          return;
        }
        this.logger.warn({ app: routing.app, target: routing.target, code: error.code, reason: error.message }, 'app process failed the upgrade');
        rawAnswer(socket, 502, `Bad gateway: the web process of ${route.app} failed to answer.\n`);
      });
      upstream.end();
    };

    await tryNext();
  }

  /** Remembers a tunnel socket until it closes, and keeps its errors from going unhandled. */
  private track(socket: Duplex): void {
    this.tunnels.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => this.tunnels.delete(socket));
  }
}

function isEncrypted(socket: Socket): boolean {
  return (socket as Partial<TLSSocket>).encrypted === true;
}

/** Answers with a short plain-text body (the router's own answers are never JSON). */
function plainAnswer(req: IncomingMessage, res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** The same answer written on a raw socket (an upgrade request has no response object), then closed. */
function rawAnswer(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed) return;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${text}`,
  );
}

/** The status line and headers of a process's answer, for a raw socket; `closing` makes the body end with the connection. */
function responseHead(answer: IncomingMessage, closing: boolean): string {
  const lines = [`HTTP/1.1 ${answer.statusCode ?? 502} ${answer.statusMessage ?? ''}`];
  const skipped = closing ? new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']) : new Set<string>();
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
    const name = answer.rawHeaders[i] as string;
    if (!skipped.has(name.toLowerCase())) lines.push(`${name}: ${answer.rawHeaders[i + 1] as string}`);
  }
  if (closing) lines.push('Connection: close');
  return `${lines.join('\r\n')}\r\n\r\n`;
}
