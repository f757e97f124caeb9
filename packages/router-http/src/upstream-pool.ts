/*
 * The upstream pool: connections to the apps' processes, one pool per process (`host:port`),
 * kept for reuse last-in first-out, idle ones closed after the pool's idle timeout, and at
 * most `maxSockets` open per process (requests beyond wait for one to close).
 */
import { createConnection, type Socket } from 'node:net';
import { HeadMemo } from './head-memo';
import type { ResponseHead } from './http1';
import type { RouteTarget } from './ports';

/** How connections to processes are kept. */
export interface PoolSettings {
  maxSockets: number;
  maxIdleSockets: number;
  idleTimeoutMs: number;
  connectTimeoutMs: number;
}

/** What uses a connection to a process: the exchange whose request it carries. */
export interface UpstreamUser {
  /** The new connection is up. */
  connected(upstream: Outbound): void;
  /** Bytes from the process. */
  upstreamData(chunk: Buffer, from: Outbound): void;
  /** The connection closed. */
  upstreamClosed(upstream: Outbound): void;
}

/** A process's key in the pools and in the targets tried: `host:port`. */
export const keyOf = (target: RouteTarget): string => `${target.host}:${target.port}`;

/**
 * What connections to processes read into (one buffer: the relay reads one socket at a time),
 * the bytes then copied out (small answers into node's shared pool): reading this way skips
 * the readable stream's work for each read.
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);

/** The keep-alive connections to one process. */
export class Pool {
  readonly idle: Outbound[] = [];
  /** Connections open or opening, idle ones included. */
  open = 0;
  readonly waiting: Array<() => void> = [];
}

/** A connection to one process. */
export class Outbound {
  readonly socket: Socket;
  user: UpstreamUser | null;
  connected = false;
  /** Has answered a request before: it came from the pool. */
  reused = false;
  idleSince = 0;
  /** After a 101: the client's connection, where every byte read now goes. */
  tunnel: Socket | null = null;
  /** The last answer head of the process and the head the client got for it. */
  readonly heads = new HeadMemo<ResponseHead>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly pools: UpstreamPools,
    readonly target: RouteTarget,
    readonly pool: Pool,
    user: UpstreamUser,
  ) {
    this.user = user;
    pool.open += 1;
    this.socket = createConnection({ host: target.host, port: target.port, noDelay: true, onread: { buffer: READ_BUFFER, callback: this.onRead } });
    this.timer = setTimeout(() => this.socket.destroy(), pools.settings.connectTimeoutMs);
    this.socket.once('connect', () => {
      clearTimeout(this.timer);
      this.connected = true;
      this.user?.connected(this);
    });
    this.socket.on('error', () => undefined);
    this.socket.once('close', () => {
      clearTimeout(this.timer);
      this.pool.open -= 1;
      const at = this.pool.idle.indexOf(this);
      if (at !== -1) this.pool.idle.splice(at, 1);
      this.pools.served(this.pool);
      const user = this.user;
      this.user = null;
      user?.upstreamClosed(this);
    });
  }

  private readonly onRead = (length: number): boolean => {
    const chunk = Buffer.allocUnsafe(length);
    READ_BUFFER.copy(chunk, 0, 0, length);
    const tunnel = this.tunnel;
    if (tunnel !== null) {
      if (!tunnel.write(chunk)) {
        this.socket.pause();
        tunnel.once('drain', () => this.socket.resume());
      }
      return true;
    }
    if (this.user === null) {
      // Bytes from a process with no request outstanding: the connection cannot be trusted.
      this.socket.destroy();
      return true;
    }
    this.user.upstreamData(chunk, this);
    return true;
  };

  destroy(): void {
    this.user = null;
    this.socket.destroy();
  }
}

/** The pools of all processes. */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  constructor(readonly settings: PoolSettings) {}

  /**
   * A connection to the target for `user`: a kept one (connected) unless `fresh`, else a new
   * one (connecting); null when the process has `maxSockets` open (see `whenRoom`).
   */
  connection(target: RouteTarget, fresh: boolean, user: UpstreamUser): Outbound | null {
    const pool = this.poolOf(keyOf(target));
    if (!fresh) {
      const kept = this.take(pool);
      if (kept !== null) {
        kept.user = user;
        return kept;
      }
    }
    if (pool.open >= this.settings.maxSockets) return null;
    return new Outbound(this, target, pool, user);
  }

  /** Calls `then` once a connection to the target closes (in turn with others waiting): there is room for one more. */
  whenRoom(target: RouteTarget, then: () => void): void {
    this.poolOf(keyOf(target)).waiting.push(then);
  }

  private poolOf(key: string): Pool {
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = new Pool();
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** A kept connection of the pool, the last one kept first; null when none. */
  private take(pool: Pool): Outbound | null {
    const oldest = Date.now() - this.settings.idleTimeoutMs;
    for (;;) {
      const upstream = pool.idle.pop();
      if (upstream === undefined) return null;
      if (!upstream.socket.destroyed && upstream.idleSince > oldest) return upstream;
      upstream.destroy();
    }
  }

  /** A connection whose answer is complete goes back to its pool (or makes room for a request waiting for one). */
  keep(upstream: Outbound): void {
    const pool = upstream.pool;
    upstream.user = null;
    if (pool.waiting.length > 0 || pool.idle.length >= this.settings.maxIdleSockets) {
      upstream.destroy();
      return;
    }
    upstream.reused = true;
    upstream.idleSince = Date.now();
    upstream.socket.resume();
    pool.idle.push(upstream);
  }

  /** A connection of the pool closed: a request waiting for room may open one. */
  served(pool: Pool): void {
    const waiting = pool.waiting.shift();
    if (waiting !== undefined) setImmediate(waiting);
  }

  /** Closes the kept connections idle for the idle timeout, and forgets pools with none open. */
  sweep(now: number): void {
    const oldest = now - this.settings.idleTimeoutMs;
    for (const [key, pool] of this.pools) {
      while (pool.idle.length > 0 && (pool.idle[0] as Outbound).idleSince <= oldest) (pool.idle.shift() as Outbound).destroy();
      if (pool.open === 0 && pool.waiting.length === 0) this.pools.delete(key);
    }
  }

  /** Closes every kept connection. */
  close(): void {
    for (const pool of this.pools.values()) for (const upstream of pool.idle.splice(0)) upstream.destroy();
    this.pools.clear();
  }
}
