import type { Server as HttpServer, ServerOptions } from 'node:http';
import type { Server, Socket } from 'node:net';

/** How many connections a server takes, and how long it waits for slow or idle ones. */
export interface ConnectionLimits {
  /** Open connections in all. */
  maxConnections: number;
  /** Open connections from one client address. */
  maxConnectionsPerAddress: number;
  /** Time to receive a request's headers, from the connection or the previous response on. */
  headersTimeoutMs: number;
  /** Time to receive a whole request (not to answer it: log streams may last). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept. */
  keepAliveTimeoutMs: number;
}

/** What a server that refused a connection at once reports, for the operator's log. */
export type RefusalListener = (reason: 'total' | 'address', address: string) => void;

function refusal(status: string, detail: string): string {
  const body = JSON.stringify({ detail });
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

const TOO_MANY_FROM_ADDRESS = refusal('429 Too Many Requests', 'Too many connections from your address.');
const TOO_MANY = refusal('503 Service Unavailable', 'Too many connections: try again later.');

/** node:http options that apply the timeouts (merged into those createServer is given). */
export function timeoutOptions(limits: ConnectionLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // The timeouts are enforced by a periodic check: it must run often enough for short ones.
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4))),
  };
}

/**
 * Counts a server's open connections, in all and per client address (the peer's: a proxy
 * in front counts as one client), and answers one past either limit at once with a short
 * HTTP refusal (429 for its address, 503 in all) and closes it, before any of its bytes are
 * read: one client holding many idle or slow connections cannot take the places of others.
 */
export function limitConnections(server: Server | HttpServer, limits: Pick<ConnectionLimits, 'maxConnections' | 'maxConnectionsPerAddress'>, refused?: RefusalListener): void {
  const perAddress = new Map<string, number>();
  let total = 0;
  // Ahead of node:http's own listener, so that a refused socket is never parsed.
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const mine = perAddress.get(address) ?? 0;
    if (total >= limits.maxConnections || mine >= limits.maxConnectionsPerAddress) {
      const reason = mine >= limits.maxConnectionsPerAddress ? 'address' : 'total';
      socket.end(reason === 'address' ? TOO_MANY_FROM_ADDRESS : TOO_MANY);
      socket.once('finish', () => socket.destroy());
      // A client that does not read must not hold the socket open either.
      socket.setTimeout(1000, () => socket.destroy());
      refused?.(reason, address);
      return;
    }
    total += 1;
    perAddress.set(address, mine + 1);
    socket.once('close', () => {
      total -= 1;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
}
