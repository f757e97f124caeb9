/*
 * The router's HTTP/1.1 relay on raw sockets: every client connection of the router's
 * listeners goes through it. It parses request heads (routing, framing, the headers it adds
 * and drops) and response heads (framing, so that connections to processes are kept and
 * reused), and passes bodies on as the buffers they arrived in. Its parts, by what they
 * decide: the inbound connection (inbound.ts), one request and its answer (exchange.ts), the
 * connections to processes (upstream-pool.ts), the headers (forwarding.ts), when a request
 * goes again (retry.ts), WebSocket tunnels (tunnels.ts) and the router's own answers
 * (own-answers.ts).
 */
import type { Socket } from 'node:net';
import { Inbound } from './inbound';
import type { ResolvedRoute, RouteTarget, RouterLogger } from './ports';
import { UpstreamPools } from './upstream-pool';

/** What one request's log line says about its routing. */
export interface Routing {
  app: string | null;
  target: string | null;
  attempts: number;
}

/** The processes of a route, in the order to try them. */
export interface Targets {
  /** The next target (a promise only when it takes a fresh lookup), null when none is left. */
  next(): RouteTarget | null | Promise<RouteTarget | null>;
  gone(): boolean;
}

/** One answered (or abandoned) request, for the access log and the observer. */
export interface Exchanged {
  host: string | null;
  method: string;
  url: string;
  status: number;
  routing: Routing;
  durationMs: number;
  client: string;
  aborted: boolean;
}

/** What the relay needs from the router that owns it. */
export interface RelayContext {
  lookUp(host: string | null, reply: (status: number, text: string) => void, routing: Routing): ResolvedRoute | null | Promise<ResolvedRoute | null>;
  targetsOf(host: string, route: ResolvedRoute): Targets;
  /**
   * The router's own answer to an ACME HTTP-01 challenge request on a plain connection: null
   * when the request is not one; else the key authorization, or null when the platform has
   * none for it (then it is routed to the app like any other request).
   */
  challenge(host: string | null, target: string, secure: boolean): Promise<string | null> | null;
  /** Where a plain HTTP request of a route that wants HTTPS is redirected (never a challenge path); null: it is routed. */
  redirect(host: string, target: string, route: ResolvedRoute, secure: boolean): string | null;
  finished(exchange: Exchanged): void;
  logger: RouterLogger;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  headersTimeoutMs: number;
  pool: { maxSockets: number; maxIdleSockets: number; idleTimeoutMs: number };
}

/**
 * Serves client connections (plain or TLS, both already accepted) with the HTTP/1.1 relay,
 * keeping connections to processes in pools and enforcing the headers and idle timeouts.
 */
export class Relay {
  closing = false;
  readonly upstreams: UpstreamPools;
  private readonly connections = new Set<Inbound>();
  private readonly tunnels = new Set<Socket>();
  private readonly sweeper: ReturnType<typeof setInterval>;
  private drained: (() => void) | null = null;

  constructor(readonly ctx: RelayContext) {
    this.upstreams = new UpstreamPools({ ...ctx.pool, connectTimeoutMs: ctx.connectTimeoutMs });
    this.sweeper = setInterval(() => this.sweep(), Math.max(100, Math.min(1000, Math.floor(ctx.headersTimeoutMs / 2), Math.floor(ctx.idleTimeoutMs / 4))));
    this.sweeper.unref();
  }

  /** Takes a client connection. */
  accept(socket: Socket, secure: boolean): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    this.connections.add(new Inbound(this, socket, secure));
  }

  /**
   * Closes tunnels and idle client connections at once, lets answers in flight finish (their
   * connections close after them) for up to `timeoutMs`, then closes what is left and every
   * kept connection to processes.
   */
  async close(timeoutMs: number): Promise<void> {
    this.closing = true;
    for (const socket of this.tunnels) socket.destroy();
    for (const connection of this.connections) {
      if (connection.waiting()) connection.socket.destroy();
    }
    if (this.connections.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.drained = null;
    for (const connection of this.connections) connection.socket.destroy();
    clearInterval(this.sweeper);
    this.upstreams.close();
  }

  forget(connection: Inbound): void {
    this.connections.delete(connection);
    if (this.connections.size === 0) this.drained?.();
  }

  /** Remembers a tunnel's socket until it closes (closed at once when the relay closes). */
  track(socket: Socket): void {
    this.tunnels.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => this.tunnels.delete(socket));
  }

  private sweep(): void {
    const now = Date.now();
    const deadline = now - this.ctx.headersTimeoutMs;
    const quiet = now - this.ctx.idleTimeoutMs;
    for (const connection of this.connections) connection.sweep(now, deadline, quiet);
    this.upstreams.sweep(now);
  }
}
