import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { endToEnd, forwardedHeaders, withoutBody } from './headers';
import type { RouteTarget, RouterLogger } from './ports';
import { IDEMPOTENT, keyOf, ownAnswer, type Routing, type Targets } from './relay';

/** What the node:http path of a request or a tunnel needs of the router that runs it. */
export interface Passage {
  logger: RouterLogger;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  /** The pool of kept connections to a target. */
  poolOf(target: RouteTarget): Agent;
  /** Remembers a tunnel's socket until it closes (the router closes them with itself). */
  track(socket: Duplex): void;
}

/** Sends a request to the route's targets in turn over node:http, and its answer back. */
export function forwardRequest(passage: Passage, req: IncomingMessage, res: ServerResponse, secure: boolean, targets: Targets, routing: Routing): void {
  const bodyless = withoutBody(req);
  const retriable = bodyless && IDEMPOTENT.has(req.method ?? '');
  const headers = forwardedHeaders(req, secure);
  let current: ReturnType<typeof httpRequest> | null = null;
  // The client went away: so does the request to its process.
  res.once('close', () => {
    if (!res.writableFinished) current?.destroy();
  });
  if (bodyless) req.resume();

  const tryNext = async (): Promise<void> => {
    const target = await targets.next();
    if (res.destroyed) return;
    if (target === null) {
      plainAnswer(req, res, 503, targets.gone() ? `No web process of ${routing.app ?? 'this app'} is running.\n` : `No web process of ${routing.app ?? 'this app'} accepted the connection.\n`);
      return;
    }
    attempt(target, !retriable);
  };

  /**
   * Sends the request to a target: on a kept connection of its pool, or (`fresh`) on a new
   * one. A request that could not be sent again (a body, or a method that is not
   * idempotent) always gets a new connection: a kept one may be closed by a stopping
   * process at the very moment the request is written, and that request would be lost.
   */
  const attempt = (target: RouteTarget, fresh: boolean): void => {
    routing.target = keyOf(target);
    routing.attempts += 1;
    let connected = false;
    let answered = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const upstream = httpRequest({
      host: target.host,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
      agent: fresh ? false : passage.poolOf(target),
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
      timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), passage.connectTimeoutMs);
      socket.once('connect', send);
    });
    upstream.once('response', (answer) => {
      answered = true;
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
      // A kept connection the process had closed: the request goes again, on a new connection.
      if (upstream.reusedSocket && !answered && retriable) {
        attempt(target, true);
        return;
      }
      passage.logger.warn({ app: routing.app, target: routing.target, code: error.code, reason: error.message }, 'app process failed to answer');
      plainAnswer(req, res, 502, `Bad gateway: the web process of ${routing.app ?? 'this app'} failed to answer.\n`);
    });
  };

  void tryNext();
}

/** Opens a WebSocket (or other upgrade) tunnel to the first target that takes it. */
export async function tunnel(passage: Passage, req: IncomingMessage, socket: Duplex, head: Buffer, secure: boolean, app: string, targets: Targets, routing: Routing): Promise<void> {
  let current: ReturnType<typeof httpRequest> | null = null;
  let tunnelled = false;
  socket.once('close', () => {
    if (!tunnelled) current?.destroy();
  });

  const tryNext = async (): Promise<void> => {
    const target = await targets.next();
    if (socket.destroyed) return;
    if (target === null) {
      rawAnswer(socket, 503, targets.gone() ? `No web process of ${app} is running.\n` : `No web process of ${app} accepted the connection.\n`);
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
      // A tunnel owns its connection: it is never one of the pool's.
      agent: false,
    });
    current = upstream;
    upstream.once('socket', (raw: Socket) => {
      if (!raw.connecting) {
        connected = true;
        return;
      }
      timer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), passage.connectTimeoutMs);
      raw.once('connect', () => {
        connected = true;
        clearTimeout(timer);
      });
    });
    upstream.once('upgrade', (answer: IncomingMessage, processSocket: Socket, processHead: Buffer) => {
      tunnelled = true;
      passage.track(processSocket);
      socket.write(responseHead(answer, false));
      if (processHead.length > 0) socket.write(processHead);
      if (head.length > 0) processSocket.write(head);
      processSocket.pipe(socket);
      socket.pipe(processSocket);
      processSocket.once('close', () => socket.destroy());
      socket.once('close', () => processSocket.destroy());
      // A quiet tunnel is closed after the idle timeout, like any client connection.
      const idle = (): void => {
        socket.destroy();
        processSocket.destroy();
      };
      processSocket.setTimeout(passage.idleTimeoutMs, idle);
      if ('setTimeout' in socket && typeof socket.setTimeout === 'function') (socket as Socket).setTimeout(passage.idleTimeoutMs, idle);
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
      passage.logger.warn({ app: routing.app, target: routing.target, code: error.code, reason: error.message }, 'app process failed the upgrade');
      rawAnswer(socket, 502, `Bad gateway: the web process of ${app} failed to answer.\n`);
    });
    upstream.end();
  };

  await tryNext();
}

/** Answers with a short plain-text body (the router's own answers are never JSON). */
export function plainAnswer(req: IncomingMessage, res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** The same answer written on a raw socket (an upgrade request has no response object), then closed. */
export function rawAnswer(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed) return;
  socket.end(ownAnswer(status, text, false, 'close'));
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
