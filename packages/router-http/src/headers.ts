import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { connectionListed } from './connection-header';
import { HOP_BY_HOP as CONNECTION_HEADERS } from './http1';
import { normalized } from './limits';

/** Headers that describe one connection, not the message: never passed on as they are. */
const HOP_BY_HOP = new Set([
  ...CONNECTION_HEADERS,
  // The router has answered `Expect: 100-continue` itself.
  'expect',
]);

/** The header names a `Connection` header lists, which are hop-by-hop too (never Host nor Content-Length). */
function listedInConnection(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  const names = text
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  return connectionListed(names) ?? new Set();
}

/** The end-to-end headers of a message: everything but the hop-by-hop ones. */
export function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = listedInConnection(headers);
  const result: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    result[name] = value;
  }
  return result;
}

/** The client's address as the app should see it: IPv4 without its IPv6 mapping prefix. */
export function clientAddress(req: IncomingMessage): string {
  return normalized(req.socket.remoteAddress ?? '');
}

/**
 * The headers sent to an app's process: the request's end-to-end headers (Host unchanged),
 * the client's address appended to `X-Forwarded-For`, and `X-Forwarded-Proto`,
 * `X-Forwarded-Host` and `X-Forwarded-Port` set by the router, replacing whatever the
 * client sent. For a WebSocket handshake the `Upgrade` headers are kept.
 */
export function forwardedHeaders(req: IncomingMessage, secure: boolean, upgrade = false): OutgoingHttpHeaders {
  const headers = endToEnd(req.headers);
  const prior = req.headers['x-forwarded-for'];
  const chain = (Array.isArray(prior) ? prior.join(', ') : (prior ?? '')).trim();
  const address = clientAddress(req);
  headers['x-forwarded-for'] = chain === '' ? address : `${chain}, ${address}`;
  headers['x-forwarded-proto'] = secure ? 'https' : 'http';
  if (req.headers.host !== undefined) headers['x-forwarded-host'] = req.headers.host;
  if (req.socket.localPort !== undefined) headers['x-forwarded-port'] = String(req.socket.localPort);
  if (upgrade && req.headers.upgrade !== undefined) {
    headers.connection = 'Upgrade';
    headers.upgrade = req.headers.upgrade;
  }
  return headers;
}

/** True when the request announces no body. */
export function withoutBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length.trim() === '0');
}
