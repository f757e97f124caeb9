/*
 * The router's HTTP/1.1 relay on raw sockets. It parses request heads (routing, framing,
 * the headers it adds and drops) and response heads (framing, so that connections to
 * processes are kept and reused), and passes bodies on as the buffers they arrived in:
 * Content-Length bodies are counted, chunked bodies are scanned for their end and passed on
 * still chunked. One request per client connection at a time: pipelined requests wait,
 * unread, until the answer before them is complete, so answers go back in order.
 */
import { STATUS_CODES } from 'node:http';
import { createConnection, type Socket } from 'node:net';
import { ChunkedScanner, HttpError, MAX_HEAD_BYTES, bodilessAnswer, headEnd, isHopByHop, parseRequestHead, parseResponseHead, type Field, type RequestHead, type ResponseHead } from './http1';
import { hostNameOf } from './host';
import { normalized } from './limits';
import type { ResolvedRoute, RouteTarget, RouterLogger } from './ports';

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

/** HTTP methods that may be sent again when a kept connection turned out to be closed. */
export const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
/** Bytes of the next requests a client connection may hold while its current answer is on its way. */
const PIPELINE_BYTES = 64 * 1024;
/** The largest response head taken from a process. */
const MAX_RESPONSE_HEAD = 64 * 1024;
/** A head and a small first part of the body are written as one buffer. */
const COALESCE_BYTES = 16 * 1024;
/**
 * What connections to processes read into (one buffer: the relay reads one socket at a time),
 * the bytes then copied out (small answers into node's shared pool): reading this way skips
 * the readable stream's work for each read.
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);
/** How long a connection the relay closes may still send (what it sends is read and dropped, so the answer is not reset). */
const LINGER_MS = 1000;

/** A process's key in the pools and in the targets tried: `host:port`. */
export const keyOf = (target: RouteTarget): string => `${target.host}:${target.port}`;

const enum State {
  Head,
  Busy,
  Tunnel,
  Closed,
}

const enum Body {
  None,
  Length,
  Chunked,
  UntilClose,
}

/** An answer of the router itself, as bytes (plain text; no body for HEAD). */
export function ownAnswer(status: number, text: string, head: boolean, connection: 'close' | 'keep-alive' | null, location: string | null = null): string {
  const length = Buffer.byteLength(text);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${length}\r\nCache-Control: no-store\r\n` +
    `${location === null ? '' : `Location: ${location}\r\n`}` +
    `${connection === null ? '' : `Connection: ${connection}\r\n`}\r\n${head ? '' : text}`
  );
}

function serializedFields(fields: Field[]): string {
  let text = '';
  for (const field of fields) text += `${field.name}: ${field.value}\r\n`;
  return text;
}

/** The keep-alive connections to one process. */
class Pool {
  readonly idle: Outbound[] = [];
  /** Connections open or opening, idle ones included. */
  open = 0;
  readonly waiting: Array<() => void> = [];
}

/** A connection to one process. */
class Outbound {
  readonly socket: Socket;
  exchange: Exchange | null;
  connected = false;
  /** Has answered a request before: it came from the pool. */
  reused = false;
  idleSince = 0;
  /** After a 101: the client's connection, where every byte read now goes. */
  tunnel: Socket | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly relay: Relay,
    readonly target: RouteTarget,
    readonly key: string,
    readonly pool: Pool,
    exchange: Exchange,
  ) {
    this.exchange = exchange;
    pool.open += 1;
    this.socket = createConnection({ host: target.host, port: target.port, noDelay: true, onread: { buffer: READ_BUFFER, callback: this.onRead } });
    this.timer = setTimeout(() => this.socket.destroy(), relay.ctx.connectTimeoutMs);
    this.socket.once('connect', () => {
      clearTimeout(this.timer);
      this.connected = true;
      this.exchange?.connected(this);
    });
    this.socket.on('error', () => undefined);
    this.socket.once('close', () => {
      clearTimeout(this.timer);
      this.pool.open -= 1;
      const at = this.pool.idle.indexOf(this);
      if (at !== -1) this.pool.idle.splice(at, 1);
      this.relay.served(this.pool);
      const exchange = this.exchange;
      this.exchange = null;
      exchange?.upstreamClosed(this);
    });
  }

  private readonly onRead = (length: number, buffer: Uint8Array): boolean => {
    const chunk = Buffer.from(buffer.subarray(0, length));
    const tunnel = this.tunnel;
    if (tunnel !== null) {
      if (!tunnel.write(chunk)) {
        this.socket.pause();
        tunnel.once('drain', () => this.socket.resume());
      }
      return true;
    }
    if (this.exchange === null) {
      // Bytes from a process with no request outstanding: the connection cannot be trusted.
      this.socket.destroy();
      return true;
    }
    this.exchange.upstreamData(chunk);
    return true;
  };

  destroy(): void {
    this.exchange = null;
    this.socket.destroy();
  }
}

/** One client connection. */
class Inbound {
  state = State.Head;
  buffer: Buffer | null = null;
  /** When the head being received started (0: none is). */
  headStarted = 0;
  exchange: Exchange | null = null;
  ended = false;
  /**
   * Bytes went one way or the other since the last sweep (a flag, not a timer refreshed on
   * every read and write): quiet for the idle timeout, the connection is closed by the sweep.
   */
  active = false;
  quietSince: number;
  readonly address: string;
  readonly port: string;
  private processing = false;
  private paused = false;
  private holds = 0;
  /** The last Host header read on this connection and its host name (clients send the same one every time). */
  private hostHeader: string | undefined = undefined;
  private hostName: string | null = null;

  constructor(
    readonly relay: Relay,
    readonly socket: Socket,
    readonly secure: boolean,
  ) {
    this.address = normalized(socket.remoteAddress ?? '');
    this.port = socket.localPort === undefined ? '' : String(socket.localPort);
    socket.setNoDelay(true);
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', () => socket.destroy());
    socket.once('close', this.onClose);
    // Quiet for the idle timeout (between requests, a stalled body): closed by the relay's sweep.
    this.quietSince = Date.now();
  }

  /** The host name of a request's Host header. */
  hostOf(header: string | undefined): string | null {
    if (header !== this.hostHeader) {
      this.hostHeader = header;
      this.hostName = hostNameOf(header);
    }
    return this.hostName;
  }

  readonly onData = (chunk: Buffer): void => {
    this.active = true;
    if (this.state === State.Busy) {
      (this.exchange as Exchange).clientData(chunk);
      return;
    }
    if (this.state !== State.Head) return;
    this.buffer = this.buffer === null ? chunk : Buffer.concat([this.buffer, chunk]);
    this.next();
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    if (this.state === State.Head) this.close();
    else if (this.state === State.Busy) this.exchange?.clientEnded();
  };

  private readonly onClose = (): void => {
    this.state = State.Closed;
    const exchange = this.exchange;
    this.exchange = null;
    exchange?.abort();
    this.relay.forget(this);
  };

  /** Reads the heads buffered, one request at a time. */
  next(): void {
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.state === State.Head && this.buffer !== null) {
        const buffer = this.buffer;
        const end = headEnd(buffer);
        if (end === -1 || end > MAX_HEAD_BYTES + 4) {
          if (buffer.length > MAX_HEAD_BYTES) this.refuse(431, 'Request header fields too large.\n');
          else if (this.headStarted === 0) this.headStarted = Date.now();
          return;
        }
        const text = buffer.toString('latin1', 0, end - 4);
        this.buffer = end < buffer.length ? buffer.subarray(end) : null;
        this.headStarted = 0;
        let head: RequestHead;
        try {
          head = parseRequestHead(text);
        } catch (error) {
          if (!(error instanceof HttpError)) throw error;
          this.refuse(error.status, `${STATUS_CODES[error.status] ?? 'Bad request'}.\n`);
          return;
        }
        this.state = State.Busy;
        const exchange = new Exchange(this, head);
        this.exchange = exchange;
        exchange.start();
      }
    } finally {
      this.processing = false;
    }
  }

  /** The current exchange is over: on to the next request, or the connection closes. */
  finish(keep: boolean): void {
    this.exchange = null;
    if (this.state !== State.Busy) return;
    if (!keep || this.ended || this.relay.closing) {
      this.close();
      return;
    }
    this.state = State.Head;
    this.holds = 0;
    this.resume();
    if (this.buffer !== null) {
      this.headStarted = Date.now();
      this.next();
    }
  }

  /** Answers a request that cannot be read (a bad head, a timeout) and closes the connection. */
  refuse(status: number, text: string): void {
    if (this.state === State.Closed) return;
    if (!this.socket.destroyed) this.socket.write(ownAnswer(status, text, false, 'close'));
    this.close();
  }

  /** Ends the connection; what the client still sends is read and dropped for a moment, so that the answer is not reset. */
  close(): void {
    if (this.state === State.Closed) return;
    this.state = State.Closed;
    this.buffer = null;
    this.resume();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), LINGER_MS).unref();
  }

  /** Stops reading until every hold is released (the process is slow to take a body, too many pipelined bytes). */
  hold(): void {
    this.holds += 1;
    if (!this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  release(): void {
    if (this.holds > 0) this.holds -= 1;
    if (this.holds === 0) this.resume();
  }

  private resume(): void {
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Keeps bytes that are not to be passed on yet (a body before its process is connected, the next requests). */
  keep(chunk: Buffer): void {
    this.buffer = this.buffer === null ? chunk : Buffer.concat([this.buffer, chunk]);
    if (this.buffer.length > PIPELINE_BYTES && !this.paused) this.hold();
  }
}

/** One request and its answer. */
class Exchange {
  private readonly started = performance.now();
  private readonly routing: Routing = { app: null, target: null, attempts: 0 };
  private host: string | null = null;
  private status = 0;
  /** The answer's head went to the client. */
  private answered = false;
  private over = false;
  private targets: Targets | null = null;
  /** The connection the request was (or is being) sent on. */
  private upstream: Outbound | null = null;
  /** The head sent to processes, made once. */
  private forwarded: string | null = null;
  // The request body.
  private bodyLeft: number;
  private readonly chunks: ChunkedScanner | null;
  private bodyDone: boolean;
  private readonly retriable: boolean;
  // The answer.
  private response: ResponseHead | null = null;
  private pending: Buffer | null = null;
  private mode = Body.None;
  private answerLeft = 0;
  private answerChunks: ChunkedScanner | null = null;
  private reusable = false;
  private keepClient = false;

  constructor(
    private readonly inbound: Inbound,
    private readonly head: RequestHead,
  ) {
    this.chunks = head.chunked ? new ChunkedScanner() : null;
    this.bodyLeft = head.chunked ? 0 : head.length;
    this.bodyDone = !head.chunked && head.length === 0;
    this.retriable = this.bodyDone && IDEMPOTENT.has(head.method) && head.upgrade === null;
  }

  private get relay(): Relay {
    return this.inbound.relay;
  }

  start(): void {
    this.host = this.inbound.hostOf(this.head.host);
    const challenge = this.relay.ctx.challenge(this.host, this.head.target, this.inbound.secure);
    if (challenge !== null) {
      // A token the platform did not publish is the app's own (its own ACME client): routed.
      void challenge.then((answer) => {
        if (this.over) return;
        if (answer === null) this.route();
        else this.reply(200, answer);
      });
      return;
    }
    this.route();
  }

  private route(): void {
    const found = this.relay.ctx.lookUp(this.host, this.reply, this.routing);
    if (found === null) return;
    if (found instanceof Promise) {
      void found.then((route) => {
        if (route !== null && !this.over) this.forward(route);
      });
      return;
    }
    this.forward(found);
  }

  private forward(route: ResolvedRoute): void {
    const location = this.relay.ctx.redirect(this.host as string, this.head.target, route, this.inbound.secure);
    if (location !== null) {
      this.reply(308, `Moved to ${location}\n`, location);
      return;
    }
    this.targets = this.relay.ctx.targetsOf(this.host as string, route);
    // The body is asked for only once the request is routed (Expect is not passed on).
    if (this.head.expectContinue && !this.bodyDone && this.head.minor === 1) this.inbound.socket.write('HTTP/1.1 100 Continue\r\n\r\n');
    this.tryNext();
  }

  private tryNext(): void {
    const next = (this.targets as Targets).next();
    if (next instanceof Promise) void next.then((target) => this.tryTarget(target));
    else this.tryTarget(next);
  }

  private tryTarget(target: RouteTarget | null): void {
    if (this.over) return;
    if (target === null) {
      const app = this.routing.app ?? 'this app';
      this.reply(503, (this.targets as Targets).gone() ? `No web process of ${app} is running.\n` : `No web process of ${app} accepted the connection.\n`);
      return;
    }
    this.attempt(target, !this.retriable);
  }

  /**
   * Sends the request to a process: on a kept connection, or (`fresh`) on a new one. A
   * request that could not be sent again (a body, a method that is not idempotent, an
   * upgrade) always gets a new connection: a kept one may be closed by a stopping process at
   * the very moment the request is written, and that request would be lost.
   */
  private attempt(target: RouteTarget, fresh: boolean): void {
    const key = keyOf(target);
    this.routing.target = key;
    this.routing.attempts += 1;
    const pool = this.relay.poolOf(key);
    if (!fresh) {
      const kept = this.relay.take(pool);
      if (kept !== null) {
        kept.exchange = this;
        this.send(kept);
        return;
      }
    }
    if (pool.open >= this.relay.ctx.pool.maxSockets) {
      pool.waiting.push(() => {
        if (!this.over) this.attempt(target, fresh);
      });
      this.routing.attempts -= 1;
      return;
    }
    this.upstream = new Outbound(this.relay, target, key, pool, this);
  }

  /** A new connection is up: the request goes. */
  connected(upstream: Outbound): void {
    if (this.over || upstream !== this.upstream) {
      upstream.destroy();
      return;
    }
    this.send(upstream);
  }

  private send(upstream: Outbound): void {
    this.upstream = upstream;
    const head = (this.forwarded ??= this.forwardedHead());
    upstream.socket.write(head, 'latin1');
    if (!this.bodyDone) {
      const buffered = this.inbound.buffer;
      this.inbound.buffer = null;
      if (buffered !== null) this.bodyBytes(buffered);
      this.inbound.release();
    }
  }

  /** The request head as the process gets it. */
  private forwardedHead(): string {
    const head = this.head;
    const listed = head.listed;
    let text = `${head.method} ${head.target} HTTP/1.${head.minor}\r\n`;
    let chain = '';
    for (const field of head.fields) {
      const lower = field.lower;
      if (isHopByHop(lower) || lower === 'expect' || (listed !== null && listed.has(lower))) continue;
      if (lower.startsWith('x-forwarded-')) {
        if (lower === 'x-forwarded-for') chain = chain === '' ? field.value : `${chain}, ${field.value}`;
        if (lower === 'x-forwarded-for' || lower === 'x-forwarded-proto' || lower === 'x-forwarded-host' || lower === 'x-forwarded-port') continue;
      }
      text += `${field.name}: ${field.value}\r\n`;
    }
    const inbound = this.inbound;
    text += `X-Forwarded-For: ${chain === '' ? inbound.address : `${chain}, ${inbound.address}`}\r\nX-Forwarded-Proto: ${inbound.secure ? 'https' : 'http'}\r\n`;
    if (head.host !== undefined) text += `X-Forwarded-Host: ${head.host}\r\n`;
    if (inbound.port !== '') text += `X-Forwarded-Port: ${inbound.port}\r\n`;
    if (head.chunked) text += 'Transfer-Encoding: chunked\r\n';
    if (head.upgrade !== null) text += `Connection: Upgrade\r\nUpgrade: ${head.upgrade}\r\n`;
    else if (head.minor === 0) text += 'Connection: keep-alive\r\n';
    return `${text}\r\n`;
  }

  /** Bytes from the client while this request is current. */
  clientData(chunk: Buffer): void {
    if (this.upstream !== null && this.upstream.connected && !this.bodyDone && this.upstream.exchange === this) {
      this.bodyBytes(chunk);
      return;
    }
    this.inbound.keep(chunk);
  }

  /** Request body bytes (and maybe what follows it) for the process. */
  private bodyBytes(chunk: Buffer): void {
    let end: number;
    if (this.chunks !== null) {
      try {
        end = this.chunks.scan(chunk);
      } catch {
        this.badBody();
        return;
      }
    } else if (chunk.length < this.bodyLeft) {
      this.bodyLeft -= chunk.length;
      end = -1;
    } else {
      end = this.bodyLeft;
      this.bodyLeft = 0;
    }
    let part = chunk;
    if (end !== -1) {
      this.bodyDone = true;
      if (end < chunk.length) {
        part = chunk.subarray(0, end);
        this.inbound.keep(chunk.subarray(end));
      }
    }
    const upstream = this.upstream as Outbound;
    if (part.length > 0 && !upstream.socket.write(part)) {
      this.inbound.hold();
      upstream.socket.once('drain', () => this.inbound.release());
    }
    if (this.bodyDone && this.response !== null && this.mode === Body.None) this.complete();
  }

  /** The client's body is not valid chunked encoding: nothing more goes to the process. */
  private badBody(): void {
    this.upstream?.destroy();
    this.upstream = null;
    if (!this.answered) this.reply(400, 'Bad request.\n');
    else this.inbound.socket.destroy();
  }

  /**
   * The client closed its side of the connection while its request is in flight: it is taken
   * as gone (as node:http and nginx do), and the request to the process is closed.
   */
  clientEnded(): void {
    this.inbound.socket.destroy();
  }

  /** Bytes from the process. */
  upstreamData(chunk: Buffer): void {
    this.inbound.active = true;
    if (this.response !== null) {
      this.answerBytes(chunk);
      return;
    }
    let buffer = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    for (;;) {
      const end = headEnd(buffer);
      if (end === -1) {
        if (buffer.length > MAX_RESPONSE_HEAD) this.failed('answer head too large');
        else this.pending = buffer;
        return;
      }
      let response: ResponseHead;
      try {
        response = parseResponseHead(buffer.toString('latin1', 0, end - 4));
      } catch (error) {
        this.failed(error instanceof Error ? error.message : 'malformed answer');
        return;
      }
      const rest = end < buffer.length ? buffer.subarray(end) : null;
      if (response.status >= 200) {
        this.answer(response, rest);
        return;
      }
      if (response.status === 101) {
        if (this.head.upgrade === null) this.failed('101 without an upgrade asked for');
        else this.tunnel(response, rest);
        return;
      }
      // An interim answer (103 Early Hints...): passed on to HTTP/1.1 clients; 100 Continue the router sent itself.
      if (response.status !== 100 && this.head.minor === 1) this.inbound.socket.write(`HTTP/1.1 ${response.status} ${response.reason}\r\n${serializedFields(response.fields)}\r\n`, 'latin1');
      if (rest === null) return;
      buffer = rest;
    }
  }

  /** The final answer's head: framing decided, head passed on with the first body bytes. */
  private answer(response: ResponseHead, rest: Buffer | null): void {
    this.response = response;
    this.status = response.status;
    const head = this.head;
    if (bodilessAnswer(head.method, response.status)) this.mode = Body.None;
    else if (response.chunked) this.mode = Body.Chunked;
    else if (response.length >= 0) this.mode = Body.Length;
    else this.mode = Body.UntilClose;
    this.answerLeft = response.length;
    if (this.mode === Body.Chunked) this.answerChunks = new ChunkedScanner();
    // A connection opened for a request that may not be sent twice is not kept either (as with
    // node's `agent: false`): a process being stopped would otherwise wait for it to go idle.
    this.reusable = this.retriable && !response.close && this.mode !== Body.UntilClose;
    this.keepClient = head.keepAlive && head.upgrade === null && this.mode !== Body.UntilClose && !this.inbound.ended && !this.relay.closing;

    const listed = response.listed;
    let text = `HTTP/1.1 ${response.status} ${response.reason}\r\n`;
    for (const field of response.fields) {
      const lower = field.lower;
      if (lower === 'transfer-encoding') {
        if (this.mode === Body.UntilClose) text += `${field.name}: ${field.value}\r\n`;
        continue;
      }
      if (isHopByHop(lower) || (listed !== null && listed.has(lower))) continue;
      if (lower === 'content-length' && this.mode === Body.Chunked) continue;
      text += `${field.name}: ${field.value}\r\n`;
    }
    if (this.mode === Body.Chunked) text += 'Transfer-Encoding: chunked\r\n';
    if (!this.keepClient) text += 'Connection: close\r\n';
    else if (head.minor === 0) text += 'Connection: keep-alive\r\n';
    text += '\r\n';
    this.answered = true;

    const client = this.inbound.socket;
    if (rest === null || this.mode === Body.None) {
      if (rest !== null) this.reusable = false;
      client.write(text, 'latin1');
      if (this.mode === Body.None) this.responseDone();
      else if (this.mode === Body.Length && this.answerLeft === 0) this.responseDone();
      return;
    }
    const { part, done } = this.framed(rest);
    if (part === null) return;
    if (part.length <= COALESCE_BYTES) {
      const length = Buffer.byteLength(text, 'latin1');
      const joined = Buffer.allocUnsafe(length + part.length);
      joined.write(text, 0, 'latin1');
      part.copy(joined, length);
      this.toClient(joined);
    } else {
      client.cork();
      client.write(text, 'latin1');
      this.toClient(part);
      client.uncork();
    }
    if (done) this.responseDone();
  }

  /** The part of these bytes that belongs to the answer's body, and whether the body ends in them. */
  private framed(chunk: Buffer): { part: Buffer | null; done: boolean } {
    switch (this.mode) {
      case Body.Length: {
        if (chunk.length < this.answerLeft) {
          this.answerLeft -= chunk.length;
          return { part: chunk, done: false };
        }
        const part = chunk.length === this.answerLeft ? chunk : chunk.subarray(0, this.answerLeft);
        if (chunk.length > this.answerLeft) this.reusable = false;
        this.answerLeft = 0;
        return { part, done: true };
      }
      case Body.Chunked: {
        let end: number;
        try {
          end = (this.answerChunks as ChunkedScanner).scan(chunk);
        } catch {
          // A process's answer the router cannot frame: the client sees it cut.
          this.relay.ctx.logger.warn({ app: this.routing.app, target: this.routing.target, reason: 'malformed chunked answer' }, 'app process failed to answer');
          this.upstream?.destroy();
          this.inbound.socket.destroy();
          return { part: null, done: false };
        }
        if (end === -1) return { part: chunk, done: false };
        if (end < chunk.length) this.reusable = false;
        return { part: end === chunk.length ? chunk : chunk.subarray(0, end), done: true };
      }
      case Body.UntilClose:
        return { part: chunk, done: false };
      case Body.None:
        this.reusable = false;
        return { part: null, done: true };
    }
  }

  private answerBytes(chunk: Buffer): void {
    if (this.over) return;
    const { part, done } = this.framed(chunk);
    if (part !== null && part.length > 0) this.toClient(part);
    if (done) this.responseDone();
  }

  private toClient(part: Buffer): void {
    const client = this.inbound.socket;
    if (!client.write(part)) {
      const upstream = this.upstream;
      if (upstream === null) return;
      upstream.socket.pause();
      client.once('drain', () => {
        this.inbound.active = true;
        upstream.socket.resume();
      });
    }
  }

  private responseDone(): void {
    // The process answered before taking the whole body: its connection and the client's cannot carry another request.
    if (!this.bodyDone) {
      this.reusable = false;
      this.keepClient = false;
    }
    this.complete();
  }

  /** The answer is complete: the process's connection goes back to its pool, the client's to its next request. */
  private complete(): void {
    if (this.over) return;
    this.over = true;
    const upstream = this.upstream;
    this.upstream = null;
    if (upstream !== null) {
      upstream.exchange = null;
      if (this.reusable && !this.relay.closing) this.relay.keep(upstream);
      else upstream.destroy();
    }
    this.record(false);
    this.inbound.finish(this.keepClient);
  }

  /** The process's connection closed. */
  upstreamClosed(upstream: Outbound): void {
    if (this.over || upstream !== this.upstream) return;
    this.upstream = null;
    if (!upstream.connected) {
      // Refused, or not accepted in time: nothing reached that process, any request may go to the next.
      this.tryNext();
      return;
    }
    if (this.response === null) {
      if (upstream.reused && this.retriable && this.pending === null) {
        // A kept connection the process had closed: the request goes again, on a new connection.
        this.attempt(upstream.target, true);
        return;
      }
      this.failed('connection closed before the answer');
      return;
    }
    if (this.mode === Body.UntilClose) {
      this.keepClient = false;
      this.complete();
      return;
    }
    // In the middle of the answer: the client sees it incomplete.
    this.inbound.socket.destroy();
  }

  /** The process failed before its answer started: 502, or the client's connection cut once an answer was under way. */
  private failed(reason: string): void {
    this.relay.ctx.logger.warn({ app: this.routing.app, target: this.routing.target, reason }, 'app process failed to answer');
    const upstream = this.upstream;
    this.upstream = null;
    upstream?.destroy();
    if (this.answered) {
      this.inbound.socket.destroy();
      return;
    }
    this.reply(502, `Bad gateway: the web process of ${this.routing.app ?? 'this app'} failed to answer.\n`);
  }

  /** The router's own answer to this request. */
  readonly reply = (status: number, text: string, location: string | null = null): void => {
    if (this.over || this.answered) return;
    this.status = status;
    this.answered = true;
    const head = this.head;
    // A body not read whole cannot be skipped reliably: the connection closes after the answer.
    const keep = this.bodyDone && head.keepAlive && head.upgrade === null && !this.inbound.ended && !this.relay.closing;
    const client = this.inbound.socket;
    if (!client.destroyed) client.write(ownAnswer(status, text, head.method === 'HEAD', keep ? (head.minor === 0 ? 'keep-alive' : null) : 'close', location));
    this.over = true;
    const upstream = this.upstream;
    this.upstream = null;
    upstream?.destroy();
    this.record(false);
    this.inbound.finish(keep);
  };

  /** The process switched protocols: from now on bytes go both ways as they are. */
  private tunnel(response: ResponseHead, rest: Buffer | null): void {
    const upstream = this.upstream as Outbound;
    const inbound = this.inbound;
    const client = inbound.socket;
    this.over = true;
    this.status = 101;
    this.answered = true;
    this.upstream = null;
    upstream.exchange = null;
    inbound.state = State.Tunnel;
    inbound.exchange = null;
    client.off('data', inbound.onData);
    client.write(`HTTP/1.1 101 ${response.reason}\r\n${serializedFields(response.fields)}\r\n`, 'latin1');
    if (rest !== null) client.write(rest);
    if (inbound.buffer !== null) upstream.socket.write(inbound.buffer);
    inbound.buffer = null;
    inbound.release();
    const processSocket = upstream.socket;
    this.relay.track(processSocket);
    this.relay.track(client);
    upstream.tunnel = client;
    client.pipe(processSocket);
    processSocket.once('close', () => client.destroy());
    client.once('close', () => processSocket.destroy());
    processSocket.setTimeout(this.relay.ctx.idleTimeoutMs, () => processSocket.destroy());
    client.setTimeout(this.relay.ctx.idleTimeoutMs, () => client.destroy());
    this.record(false);
  }

  /** The client went away. */
  abort(): void {
    if (this.over) return;
    this.over = true;
    const upstream = this.upstream;
    this.upstream = null;
    upstream?.destroy();
    this.record(true);
  }

  private record(aborted: boolean): void {
    this.relay.ctx.finished({
      host: this.host,
      method: this.head.method,
      url: this.head.target,
      // Nothing was answered to a client that left first: 499, as in nginx's logs.
      status: this.status === 0 ? 499 : this.status,
      routing: this.routing,
      durationMs: Math.round((performance.now() - this.started) * 1000) / 1000,
      client: this.inbound.address,
      aborted,
    });
  }
}

/**
 * Serves client connections (plain or TLS, both already accepted) with the HTTP/1.1 relay,
 * keeping connections to processes in pools (LIFO, idle ones closed after the pool's idle
 * timeout) and enforcing the headers timeout.
 */
export class Relay {
  closing = false;
  private readonly connections = new Set<Inbound>();
  private readonly tunnels = new Set<Socket>();
  private readonly pools = new Map<string, Pool>();
  private readonly sweeper: ReturnType<typeof setInterval>;
  private drained: (() => void) | null = null;

  constructor(readonly ctx: RelayContext) {
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
      if (connection.state === State.Head && connection.buffer === null) connection.socket.destroy();
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
    for (const pool of this.pools.values()) for (const upstream of pool.idle.splice(0)) upstream.destroy();
    this.pools.clear();
  }

  forget(connection: Inbound): void {
    this.connections.delete(connection);
    if (this.connections.size === 0) this.drained?.();
  }

  track(socket: Socket): void {
    this.tunnels.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => this.tunnels.delete(socket));
  }

  poolOf(key: string): Pool {
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = new Pool();
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** A kept connection of the pool, the last one kept first; null when none. */
  take(pool: Pool): Outbound | null {
    const oldest = Date.now() - this.ctx.pool.idleTimeoutMs;
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
    if (pool.waiting.length > 0 || pool.idle.length >= this.ctx.pool.maxIdleSockets) {
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

  private sweep(): void {
    const now = Date.now();
    const deadline = now - this.ctx.headersTimeoutMs;
    const quiet = now - this.ctx.idleTimeoutMs;
    for (const connection of this.connections) {
      if (connection.state === State.Head && connection.headStarted !== 0 && connection.headStarted < deadline) connection.refuse(408, 'Request timeout.\n');
      else if (connection.active) {
        connection.active = false;
        connection.quietSince = now;
      } else if (connection.quietSince <= quiet && connection.state !== State.Tunnel) connection.socket.destroy();
    }
    const oldest = now - this.ctx.pool.idleTimeoutMs;
    for (const [key, pool] of this.pools) {
      while (pool.idle.length > 0 && (pool.idle[0] as Outbound).idleSince <= oldest) (pool.idle.shift() as Outbound).destroy();
      if (pool.open === 0 && pool.waiting.length === 0) this.pools.delete(key);
    }
  }
}
