/*
 * The forwarding rules: what the router changes in the heads it passes on, one function per
 * header rule, then the two heads they make (the request as a process gets it, the answer as
 * the client gets it). Bodies are not touched here; how they are framed is decided by the
 * exchange (`BodyMode`) and only named in these heads.
 */
import { bodilessAnswer, type RequestHead, type ResponseHead } from './http1';

/** How an answer's body is framed toward the client. */
export type BodyMode = 'none' | 'length' | 'chunked' | 'until-close';

/** How an answer's body is framed: none (HEAD, 1xx, 204, 304), counted, chunked, or until the process closes the connection. */
export function answerBody(method: string, response: Pick<ResponseHead, 'status' | 'chunked' | 'length'>): BodyMode {
  if (bodilessAnswer(method, response.status)) return 'none';
  if (response.chunked) return 'chunked';
  return response.length >= 0 ? 'length' : 'until-close';
}

/** The client side of a request, as the process is told of it. */
export interface ClientSide {
  /** The client's address (IPv4 without its IPv6 mapping). */
  address: string;
  /** The router's port the client connected to; '' when unknown. */
  port: string;
  secure: boolean;
}

/** Headers that describe one connection, never passed on as they are (RFC 9110 §7.6.1). */
export const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Hop-by-hop removal: the same test as `HOP_BY_HOP.has(lower)`, without hashing a string made for one request. */
export function isHopByHop(lower: string): boolean {
  switch (lower) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'proxy-authenticate':
    case 'proxy-authorization':
    case 'te':
    case 'trailer':
    case 'transfer-encoding':
    case 'upgrade':
      return true;
    default:
      return false;
  }
}

/**
 * Connection-listed removal: a header the message's `Connection` header names is hop-by-hop
 * for that message. `listed` comes from `connectionListed`, which never holds Host nor
 * Content-Length.
 */
export function isConnectionListed(lower: string, listed: ReadonlySet<string> | null): boolean {
  return listed !== null && listed.has(lower);
}

/** `Expect` is not passed on: the router answers `100-continue` itself once the request is routed. */
export function isAnsweredExpect(lower: string): boolean {
  return lower === 'expect';
}

/** The `X-Forwarded-*` headers the router sets itself: what a client sent of them is dropped (its For chain is kept, see `forwardedFor`). */
export function isSetByRouter(lower: string): boolean {
  if (!lower.startsWith('x-forwarded-')) return false;
  return lower === 'x-forwarded-for' || lower === 'x-forwarded-proto' || lower === 'x-forwarded-host' || lower === 'x-forwarded-port';
}

/** `X-Forwarded-For`: the chain the client sent (its headers joined in order), with the client's address appended. */
export function forwardedFor(chain: string, address: string): string {
  return chain === '' ? address : `${chain}, ${address}`;
}

/** `X-Forwarded-Proto`: how the client reached the router. */
export function forwardedProto(secure: boolean): 'https' | 'http' {
  return secure ? 'https' : 'http';
}

/** `X-Forwarded-Host`: the Host header as the client sent it; none without one. */
export function forwardedHost(host: string | undefined): string | null {
  return host === undefined ? null : host;
}

/** `X-Forwarded-Port`: the router's port the client connected to; none when unknown. */
export function forwardedPort(port: string): string | null {
  return port === '' ? null : port;
}

/**
 * The request's own framing and connection toward the process: a chunked body stays chunked,
 * an upgrade is asked for again (`Connection: Upgrade`), and an HTTP/1.0 request asks for the
 * connection to be kept (the router keeps connections to processes).
 */
export function requestConnection(head: Pick<RequestHead, 'chunked' | 'upgrade' | 'minor'>): string {
  let text = head.chunked ? 'Transfer-Encoding: chunked\r\n' : '';
  if (head.upgrade !== null) text += `Connection: Upgrade\r\nUpgrade: ${head.upgrade}\r\n`;
  else if (head.minor === 0) text += 'Connection: keep-alive\r\n';
  return text;
}

/** The request head as the process gets it: the client's end-to-end headers, Host unchanged, and the router's `X-Forwarded-*`. */
export function forwardedRequestHead(head: RequestHead, client: ClientSide): string {
  const listed = head.listed;
  let text = `${head.method} ${head.target} HTTP/1.${head.minor}\r\n`;
  let chain = '';
  for (const field of head.fields) {
    const lower = field.lower;
    if (isHopByHop(lower) || isAnsweredExpect(lower) || isConnectionListed(lower, listed)) continue;
    if (isSetByRouter(lower)) {
      if (lower === 'x-forwarded-for') chain = forwardedFor(chain, field.value);
      continue;
    }
    text += `${field.name}: ${field.value}\r\n`;
  }
  text += `X-Forwarded-For: ${forwardedFor(chain, client.address)}\r\nX-Forwarded-Proto: ${forwardedProto(client.secure)}\r\n`;
  const host = forwardedHost(head.host);
  if (host !== null) text += `X-Forwarded-Host: ${host}\r\n`;
  const port = forwardedPort(client.port);
  if (port !== null) text += `X-Forwarded-Port: ${port}\r\n`;
  return `${text}${requestConnection(head)}\r\n`;
}

/**
 * An answer's `Transfer-Encoding` is passed on as the process sent it only for a body that
 * runs until the connection closes; otherwise the router frames the body itself.
 */
export function passesTransferEncoding(mode: BodyMode): boolean {
  return mode === 'until-close';
}

/** An answer's `Content-Length` is dropped when its body is passed on chunked (`answerConnection` names the chunking). */
export function dropsContentLength(lower: string, mode: BodyMode): boolean {
  return mode === 'chunked' && lower === 'content-length';
}

/** The answer's framing and connection toward the client: chunked named again, and whether the client's connection stays. */
export function answerConnection(mode: BodyMode, keepClient: boolean, clientMinor: 0 | 1): string {
  let text = mode === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : '';
  if (!keepClient) text += 'Connection: close\r\n';
  else if (clientMinor === 0) text += 'Connection: keep-alive\r\n';
  return text;
}

/** The answer head as the client gets it: the process's end-to-end headers, framed for the client. */
export function forwardedAnswerHead(response: ResponseHead, mode: BodyMode, keepClient: boolean, clientMinor: 0 | 1): string {
  const listed = response.listed;
  let text = `HTTP/1.1 ${response.status} ${response.reason}\r\n`;
  for (const field of response.fields) {
    const lower = field.lower;
    if (lower === 'transfer-encoding') {
      if (passesTransferEncoding(mode)) text += `${field.name}: ${field.value}\r\n`;
      continue;
    }
    if (isHopByHop(lower) || isConnectionListed(lower, listed) || dropsContentLength(lower, mode)) continue;
    text += `${field.name}: ${field.value}\r\n`;
  }
  return `${text}${answerConnection(mode, keepClient, clientMinor)}\r\n`;
}
