/*
 * The exchange: one request and its answer. It routes the request (the router's own answers
 * first: ACME challenges, redirects, 404 and 503), sends it to the route's processes in turn
 * as the retry policy allows, and passes the answer back framed for the client: Content-Length
 * bodies are counted, chunked bodies are scanned for their end and passed on still chunked.
 */
import type { Outbound, UpstreamUser } from './upstream-pool';
import { ChunkedScanner, headEnd, parseResponseHead, type RequestHead, type ResponseHead } from './http1';
import { answerBody, forwardedAnswerHead, type BodyMode } from './forwarding';
import type { Inbound } from './inbound';
import { ownAnswer } from './own-answers';
import type { ResolvedRoute, RouteTarget } from './ports';
import type { Relay, Routing, Targets } from './relay';
import { afterClose, keepsConnection, mayResend } from './retry';
import { interimHead, openTunnel } from './tunnels';
import { keyOf } from './upstream-pool';

/** The largest response head taken from a process. */
const MAX_RESPONSE_HEAD = 64 * 1024;
/** A head and a small first part of the body are written as one buffer. */
const COALESCE_BYTES = 16 * 1024;
const MODES: readonly BodyMode[] = ['none', 'length', 'chunked', 'until-close'];

/** One request and its answer. */
export class Exchange implements UpstreamUser {
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
  /** The request may be sent twice (`mayResend`): it uses kept connections. */
  private readonly resendable: boolean;
  // The answer.
  private response: ResponseHead | null = null;
  private pending: Buffer | null = null;
  private mode: BodyMode = 'none';
  private answerLeft = 0;
  private answerChunks: ChunkedScanner | null = null;
  /** The answer's body ended in the bytes `framed` read last. */
  private bodyEnded = false;
  private reusable = false;
  private keepClient = false;

  constructor(
    private readonly inbound: Inbound,
    private readonly head: RequestHead,
  ) {
    this.chunks = head.chunked ? new ChunkedScanner() : null;
    this.bodyLeft = head.chunked ? 0 : head.length;
    this.bodyDone = !head.chunked && head.length === 0;
    this.resendable = mayResend(head.method, this.bodyDone, head.upgrade);
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
    this.attempt(target, !this.resendable);
  }

  /** Sends the request to a process: on a kept connection, or (`fresh`, see `mayResend`) on a new one. */
  private attempt(target: RouteTarget, fresh: boolean): void {
    this.routing.target = keyOf(target);
    const upstreams = this.relay.upstreams;
    const upstream = upstreams.connection(target, fresh, this);
    if (upstream === null) {
      upstreams.whenRoom(target, () => {
        if (!this.over) this.attempt(target, fresh);
      });
      return;
    }
    this.routing.attempts += 1;
    if (upstream.connected) this.send(upstream);
    else this.upstream = upstream;
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
    const head = (this.forwarded ??= this.inbound.forwarded(this.head));
    upstream.socket.write(head, 'latin1');
    if (!this.bodyDone) {
      const buffered = this.inbound.buffer;
      this.inbound.buffer = null;
      if (buffered !== null) this.bodyBytes(buffered);
      this.inbound.release();
    }
  }

  /** Bytes from the client while this request is current. */
  clientData(chunk: Buffer): void {
    if (this.upstream !== null && this.upstream.connected && !this.bodyDone && this.upstream.user === this) {
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
    if (this.bodyDone && this.response !== null && this.mode === 'none') this.complete();
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
  upstreamData(chunk: Buffer, from: Outbound): void {
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
        response = from.heads.parsed(buffer.toString('latin1', 0, end - 4), parseResponseHead);
      } catch (error) {
        this.failed(error instanceof Error ? error.message : 'malformed answer');
        return;
      }
      const rest = end < buffer.length ? buffer.subarray(end) : null;
      if (response.status >= 200) {
        this.answer(response, rest, from);
        return;
      }
      if (response.status === 101) {
        if (this.head.upgrade === null) this.failed('101 without an upgrade asked for');
        else this.tunnel(response, rest);
        return;
      }
      // An interim answer (103 Early Hints...): passed on to HTTP/1.1 clients; 100 Continue the router sent itself.
      if (response.status !== 100 && this.head.minor === 1) this.inbound.socket.write(interimHead(response), 'latin1');
      if (rest === null) return;
      buffer = rest;
    }
  }

  /** The final answer's head: framing decided, head passed on with the first body bytes. */
  private answer(response: ResponseHead, rest: Buffer | null, from: Outbound): void {
    this.response = response;
    this.status = response.status;
    const head = this.head;
    this.mode = answerBody(head.method, response);
    this.answerLeft = response.length;
    if (this.mode === 'chunked') this.answerChunks = new ChunkedScanner();
    this.reusable = keepsConnection(this.resendable, response.close, this.mode);
    this.keepClient = head.keepAlive && head.upgrade === null && this.mode !== 'until-close' && !this.inbound.ended && !this.relay.closing;

    // The answer head depends on the process's head and on these three: the connection remembers it for them.
    const key = (MODES.indexOf(this.mode) << 2) | (this.keepClient ? 2 : 0) | head.minor;
    const heads = from.heads;
    const text = heads.madeOf(response, key) ?? heads.remember(response, key, forwardedAnswerHead(response, this.mode, this.keepClient, head.minor));
    this.answered = true;

    const client = this.inbound.socket;
    if (rest === null || this.mode === 'none') {
      if (rest !== null) this.reusable = false;
      client.write(text, 'latin1');
      if (this.mode === 'none') this.responseDone();
      else if (this.mode === 'length' && this.answerLeft === 0) this.responseDone();
      return;
    }
    const part = this.framed(rest);
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
    if (this.bodyEnded) this.responseDone();
  }

  /** The part of these bytes that belongs to the answer's body (`bodyEnded` set when the body ends in them). */
  private framed(chunk: Buffer): Buffer | null {
    switch (this.mode) {
      case 'length': {
        if (chunk.length < this.answerLeft) {
          this.answerLeft -= chunk.length;
          return chunk;
        }
        const part = chunk.length === this.answerLeft ? chunk : chunk.subarray(0, this.answerLeft);
        if (chunk.length > this.answerLeft) this.reusable = false;
        this.answerLeft = 0;
        this.bodyEnded = true;
        return part;
      }
      case 'chunked': {
        let end: number;
        try {
          end = (this.answerChunks as ChunkedScanner).scan(chunk);
        } catch {
          // A process's answer the router cannot frame: the client sees it cut.
          this.relay.ctx.logger.warn({ app: this.routing.app, target: this.routing.target, reason: 'malformed chunked answer' }, 'app process failed to answer');
          this.upstream?.destroy();
          this.inbound.socket.destroy();
          return null;
        }
        if (end === -1) return chunk;
        if (end < chunk.length) this.reusable = false;
        this.bodyEnded = true;
        return end === chunk.length ? chunk : chunk.subarray(0, end);
      }
      case 'until-close':
        return chunk;
      case 'none':
        this.reusable = false;
        this.bodyEnded = true;
        return null;
    }
  }

  private answerBytes(chunk: Buffer): void {
    if (this.over) return;
    const part = this.framed(chunk);
    if (part !== null && part.length > 0) this.toClient(part);
    if (this.bodyEnded) this.responseDone();
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
      if (this.reusable && !this.relay.closing) this.relay.upstreams.keep(upstream);
      else upstream.destroy();
    }
    this.record(false);
    this.inbound.finish(this.keepClient);
  }

  /** The process's connection closed. */
  upstreamClosed(upstream: Outbound): void {
    if (this.over || upstream !== this.upstream) return;
    this.upstream = null;
    if (this.response === null) {
      const next = afterClose({ connected: upstream.connected, reused: upstream.reused, resendable: this.resendable, answerStarted: this.pending !== null });
      if (next === 'next-target') this.tryNext();
      else if (next === 'same-target-anew') this.attempt(upstream.target, true);
      else this.failed('connection closed before the answer');
      return;
    }
    if (this.mode === 'until-close') {
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

  /** The process switched protocols: from now on bytes go both ways as they are (tunnels.ts). */
  private tunnel(response: ResponseHead, rest: Buffer | null): void {
    const upstream = this.upstream as Outbound;
    this.over = true;
    this.status = 101;
    this.answered = true;
    this.upstream = null;
    openTunnel(this.relay, this.inbound, upstream, response, rest);
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

