import type { Server as HttpServer, ServerOptions } from 'node:http';
import type { Server, Socket } from 'node:net';
import { ConnectionLedger, type ConnectionCaps } from '@svc/core';

/** How many connections a server takes, and how long it waits for slow or idle ones. */
export interface ConnectionLimits {
  /** Open connections in all. */
  maxConnections: number;
  /** Open connections from one client address (an IPv6 /64 counts as one). */
  maxConnectionsPerAddress: number;
  /** The last places of the total, for clients that hold no connection yet (see ConnectionCaps). */
  reservedConnections: number;
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
 * Counts a server's open connections, in all and per client (the peer's address, an IPv6 /64
 * as one: a proxy in front counts as one client), and answers one past a limit at once with
 * a short HTTP refusal (429 for its address, 503 in all) and closes it, before any of its
 * bytes are read: one client holding many idle or slow connections cannot take the places of
 * others, and the reserved last places go only to clients holding none, so that a few dozen
 * addresses at their cap cannot take the server from everyone.
 */
export function limitConnections(
  server: Server | HttpServer,
  limits: Pick<ConnectionLimits, 'maxConnections' | 'maxConnectionsPerAddress'> & Partial<Pick<ConnectionCaps, 'reservedConnections'>>,
  refused?: RefusalListener,
): void {
  const ledger = new ConnectionLedger({ reservedConnections: 0, ...limits });
  // Ahead of node:http's own listener, so that a refused socket is never parsed.
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const admitted = ledger.admit(address);
    if ('refused' in admitted) {
      socket.end(admitted.refused === 'address' ? TOO_MANY_FROM_ADDRESS : TOO_MANY);
      socket.once('finish', () => socket.destroy());
      // A client that does not read must not hold the socket open either.
      socket.setTimeout(1000, () => socket.destroy());
      refused?.(admitted.refused, address);
      return;
    }
    socket.once('close', admitted.release);
  });
}
