/*
 * The inbound connection: one client connection of the relay, reading request heads one at a
 * time. Pipelined requests wait, unread, until the answer before them is complete, so that
 * answers go back in order; a connection quiet for the idle timeout, or slow to send a head,
 * is closed by the relay's sweep.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { Exchange } from './exchange';
import { forwardedRequestHead } from './forwarding';
import { HeadMemo } from './head-memo';
import { HttpError, MAX_HEAD_BYTES, headEnd, parseRequestHead, type RequestHead } from './http1';
import { hostNameOf } from './host';
import { normalized } from './limits';
import { ownAnswer } from './own-answers';
import type { Relay } from './relay';

const enum State {
  Head,
  Busy,
  Tunnel,
  Closed,
}

/** Bytes of the next requests a client connection may hold while its current answer is on its way. */
const PIPELINE_BYTES = 64 * 1024;
/** How long a connection the relay closes may still send (what it sends is read and dropped, so the answer is not reset). */
const LINGER_MS = 1000;

/** One client connection. */
export class Inbound {
  private state = State.Head;
  buffer: Buffer | null = null;
  /** When the head being received started (0: none is). */
  private headStarted = 0;
  private exchange: Exchange | null = null;
  ended = false;
  /**
   * Bytes went one way or the other since the last sweep (a flag, not a timer refreshed on
   * every read and write): quiet for the idle timeout, the connection is closed by the sweep.
   */
  active = false;
  private quietSince: number;
  /** The client's address (IPv4 without its IPv6 mapping), for `X-Forwarded-For` and the log. */
  readonly address: string;
  readonly port: string;
  private processing = false;
  private paused = false;
  private holds = 0;
  /** The last Host header read on this connection and its host name (clients send the same one every time). */
  private hostHeader: string | undefined = undefined;
  private hostName: string | null = null;
  /** The last request head and the head sent to processes for it. */
  private readonly heads = new HeadMemo<RequestHead>();

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

  /** The request head as processes get it (made once while the client sends the same head). */
  forwarded(head: RequestHead): string {
    return this.heads.madeOf(head, 0) ?? this.heads.remember(head, 0, forwardedRequestHead(head, this));
  }

  private readonly onData = (chunk: Buffer): void => {
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
  private next(): void {
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
          head = this.heads.parsed(text, parseRequestHead);
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

  /**
   * The current exchange became a tunnel: bytes from the client no longer go through this
   * connection's reading. Returns what the client had sent beyond the request head.
   */
  tunnelled(): Buffer | null {
    this.state = State.Tunnel;
    this.exchange = null;
    this.socket.off('data', this.onData);
    const buffered = this.buffer;
    this.buffer = null;
    this.release();
    return buffered;
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

  /** Waiting for a request, with none of its bytes received: closed at once when the relay closes. */
  waiting(): boolean {
    return this.state === State.Head && this.buffer === null;
  }

  /** The relay's sweep: a head slow to arrive is answered 408, a connection quiet for the idle timeout (not a tunnel) is closed. */
  sweep(now: number, headDeadline: number, quietBefore: number): void {
    if (this.state === State.Head && this.headStarted !== 0 && this.headStarted < headDeadline) this.refuse(408, 'Request timeout.\n');
    else if (this.active) {
      this.active = false;
      this.quietSince = now;
    } else if (this.quietSince <= quietBefore && this.state !== State.Tunnel) this.socket.destroy();
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
