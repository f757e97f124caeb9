/*
 * The little of HTTP/1.1 the relay parses: request and response heads (for routing, the
 * headers it adds or drops, and framing) and chunked bodies (only to find where they end;
 * their bytes are passed on as they are). Everything ambiguous is refused: a proxy that reads
 * a message's length one way while the process behind it reads it another is how requests
 * are smuggled.
 */
import { connectionListed } from './connection-header';

/** A message the relay refuses, with the status to answer (400, 431; 502 for a process's answer). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The largest head accepted, request line or status line included (node's default). */
export const MAX_HEAD_BYTES = 16 * 1024;

/** Where a head ends: the index just after its empty line, or -1 while incomplete. */
export function headEnd(buffer: Buffer, from = 0): number {
  const at = buffer.indexOf('\r\n\r\n', from, 'latin1');
  return at === -1 ? -1 : at + 4;
}

/** One header line as received. */
export interface Field {
  name: string;
  /** The name in lower case. */
  lower: string;
  value: string;
}

/** What the relay needs of a request head. */
export interface RequestHead {
  method: string;
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  fields: Field[];
  /** The Host header, when there is one (exactly one is accepted). */
  host: string | undefined;
  /** The body's length when framed by Content-Length; 0 without a body. */
  length: number;
  chunked: boolean;
  /** The client wants the connection kept after the answer. */
  keepAlive: boolean;
  /** The protocol asked for (`Connection: upgrade` with an `Upgrade` header), or null. */
  upgrade: string | null;
  expectContinue: boolean;
  /** Lower-case names the Connection header lists (hop-by-hop for this message). */
  listed: Set<string> | null;
}

/** What the relay needs of a response head. */
export interface ResponseHead {
  minor: 0 | 1;
  status: number;
  reason: string;
  fields: Field[];
  /** Content-Length, or -1 without one. */
  length: number;
  chunked: boolean;
  /** The process closes the connection after this answer (or the body runs until it does). */
  close: boolean;
  listed: Set<string> | null;
}

/** Characters of a token (RFC 9110 §5.6.2), by code: 1 when allowed. */
const TOKEN_CHARS = new Uint8Array(128);
for (const c of "!#$%&'*+.^_`|~-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TOKEN_CHARS[c.charCodeAt(0)] = 1;
/** True when `text[start, end)` is a non-empty token. */
function isToken(text: string, start: number, end: number): boolean {
  if (start >= end) return false;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c > 127 || TOKEN_CHARS[c] === 0) return false;
  }
  return true;
}
/** True when the text holds a control character other than HTAB (CR and LF included), which no header value may. */
function hasControl(text: string, start = 0, end = text.length): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127) return true;
  }
  return false;
}
/** A request target: visible characters (and obs-text), no spaces or controls. */
function isTarget(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x21 || c === 0x7f || c > 0xff) return false;
  }
  return true;
}
const DIGITS = /^[0-9]{1,15}$/;
const STATUS = /^[1-9][0-9]{2}$/;

/** A header value without its surrounding spaces and tabs (and only those). */
function trimmed(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 32 || value.charCodeAt(start) === 9)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 32 || value.charCodeAt(end - 1) === 9)) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function tokens(value: string): string[] {
  // The common case, one token ("keep-alive", "close"), without splitting.
  if (value.indexOf(',') === -1) {
    const token = trimmed(value).toLowerCase();
    return token === '' ? [] : [token];
  }
  const list: string[] = [];
  for (const part of value.split(',')) {
    const token = trimmed(part).toLowerCase();
    if (token !== '') list.push(token);
  }
  return list;
}

/** A header name in lower case: the names most sent, without making a new string. */
function lowerName(name: string): string {
  switch (name) {
    case 'Host':
      return 'host';
    case 'Content-Type':
      return 'content-type';
    case 'Content-Length':
      return 'content-length';
    case 'Connection':
      return 'connection';
    case 'Keep-Alive':
      return 'keep-alive';
    case 'Date':
      return 'date';
    case 'Accept':
      return 'accept';
    case 'User-Agent':
      return 'user-agent';
    case 'Transfer-Encoding':
      return 'transfer-encoding';
    case 'Cache-Control':
      return 'cache-control';
    case 'Accept-Encoding':
      return 'accept-encoding';
    case 'Server':
      return 'server';
    default:
      return name.toLowerCase();
  }
}

/** The header lines of a head (`text` from `from`, lines ending in CRLF but the last), checked. */
function fieldsOf(text: string, from: number, status: number): Field[] {
  const fields: Field[] = [];
  const length = text.length;
  let pos = from;
  while (pos < length) {
    let eol = text.indexOf('\r\n', pos);
    if (eol === -1) eol = length;
    let colon = -1;
    let badName = false;
    let upper = false;
    for (let i = pos; i < eol; i++) {
      const c = text.charCodeAt(i);
      if (c === 58 /* : */) {
        colon = i;
        break;
      }
      if (c > 127 || TOKEN_CHARS[c] === 0) badName = true;
      else if (c >= 65 && c <= 90) upper = true;
    }
    // No name, a name with spaces ("Content-Length : 5"), or a folded line: all refused.
    if (colon <= pos) throw new HttpError(status, 'malformed header line');
    if (badName) throw new HttpError(status, 'malformed header name');
    let start = colon + 1;
    let end = eol;
    while (start < end && (text.charCodeAt(start) === 32 || text.charCodeAt(start) === 9)) start++;
    while (end > start && (text.charCodeAt(end - 1) === 32 || text.charCodeAt(end - 1) === 9)) end--;
    if (hasControl(text, start, end)) throw new HttpError(status, 'control character in a header value');
    const name = text.slice(pos, colon);
    fields.push({ name, lower: upper ? lowerName(name) : name, value: text.slice(start, end) });
    pos = eol + 2;
  }
  return fields;
}

/** A Content-Length: one number, however often it is repeated; anything else is refused. */
function lengthOf(previous: number, value: string, status: number): number {
  if (value.length > 0 && value.length <= 15 && previous === -1) {
    // The common case, one plain number, read without splitting.
    let n = 0;
    let i = 0;
    for (; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    if (i === value.length) return n;
  }
  let length = previous;
  for (const part of value.split(',')) {
    const text = trimmed(part);
    if (!DIGITS.test(text)) throw new HttpError(status, 'invalid Content-Length');
    const n = Number(text);
    if (length !== -1 && length !== n) throw new HttpError(status, 'conflicting Content-Length');
    length = n;
  }
  return length;
}

/**
 * Parses a request head: `text` is the head as latin1, without its final empty line.
 * @throws HttpError (400) for anything malformed or ambiguous: a bad request line, header
 *   syntax (spaces before the colon, folding, controls), both Content-Length and
 *   Transfer-Encoding, a Transfer-Encoding other than `chunked` or in HTTP/1.0, conflicting
 *   Content-Lengths, several Host headers, or no Host in HTTP/1.1.
 */
export function parseRequestHead(text: string): RequestHead {
  // Empty lines before a request line are tolerated (RFC 9112 §2.2).
  let from = 0;
  while (text.startsWith('\r\n', from)) from += 2;
  let eol = text.indexOf('\r\n', from);
  if (eol === -1) eol = text.length;
  const line = text.slice(from, eol);
  const first = line.indexOf(' ');
  const second = first === -1 ? -1 : line.indexOf(' ', first + 1);
  if (first <= 0 || second === -1 || line.indexOf(' ', second + 1) !== -1) throw new HttpError(400, 'malformed request line');
  const method = line.slice(0, first);
  const target = line.slice(first + 1, second);
  const version = line.slice(second + 1);
  if (!isToken(method, 0, method.length) || !isTarget(target)) throw new HttpError(400, 'malformed request line');
  if (method === 'CONNECT') throw new HttpError(400, 'CONNECT is not served');
  if (target.charCodeAt(0) !== 47 /* / */ && !(target === '*' && method === 'OPTIONS') && !/^https?:\/\//i.test(target)) throw new HttpError(400, 'malformed request target');
  let minor: 0 | 1;
  if (version === 'HTTP/1.1') minor = 1;
  else if (version === 'HTTP/1.0') minor = 0;
  else throw new HttpError(400, 'unsupported HTTP version');

  const fields = fieldsOf(text, eol + 2, 400);
  let host: string | undefined;
  let length = -1;
  let transfer: string | null = null;
  let connection: string[] | null = null;
  let upgrade: string | null = null;
  let expectContinue = false;
  for (const field of fields) {
    switch (field.lower) {
      case 'host':
        if (host !== undefined) throw new HttpError(400, 'several Host headers');
        host = field.value;
        break;
      case 'content-length':
        length = lengthOf(length, field.value, 400);
        break;
      case 'transfer-encoding':
        transfer = transfer === null ? field.value : `${transfer},${field.value}`;
        break;
      case 'connection':
        connection = connection === null ? tokens(field.value) : [...connection, ...tokens(field.value)];
        break;
      case 'upgrade':
        upgrade = field.value;
        break;
      case 'expect':
        expectContinue = field.value.toLowerCase() === '100-continue';
        break;
    }
  }
  if (minor === 1 && host === undefined) throw new HttpError(400, 'no Host header');
  let chunked = false;
  if (transfer !== null) {
    if (length !== -1) throw new HttpError(400, 'both Content-Length and Transfer-Encoding');
    if (minor === 0) throw new HttpError(400, 'Transfer-Encoding in HTTP/1.0');
    const codings = tokens(transfer);
    if (codings.length !== 1 || codings[0] !== 'chunked') throw new HttpError(400, 'unsupported Transfer-Encoding');
    chunked = true;
  }
  const listed = connectionListed(connection);
  const keepAlive = minor === 1 ? listed?.has('close') !== true : listed?.has('keep-alive') === true && listed.has('close') !== true;
  return {
    method,
    target,
    minor,
    fields,
    host,
    length: length === -1 ? 0 : length,
    chunked,
    keepAlive,
    upgrade: upgrade !== null && listed?.has('upgrade') === true ? upgrade : null,
    expectContinue,
    listed,
  };
}

/**
 * Parses a process's response head (`text` as latin1, without its final empty line).
 * @throws HttpError (502) for a malformed status line or headers, or an invalid or
 *   conflicting Content-Length.
 */
export function parseResponseHead(text: string): ResponseHead {
  let eol = text.indexOf('\r\n');
  if (eol === -1) eol = text.length;
  const line = text.slice(0, eol);
  let minor: 0 | 1;
  if (line.startsWith('HTTP/1.1 ')) minor = 1;
  else if (line.startsWith('HTTP/1.0 ')) minor = 0;
  else throw new HttpError(502, 'malformed status line');
  const code = line.slice(9, 12);
  if (!STATUS.test(code) || (line.length > 12 && line.charCodeAt(12) !== 32)) throw new HttpError(502, 'malformed status line');
  const reason = line.slice(13);
  if (hasControl(reason)) throw new HttpError(502, 'malformed status line');
  const fields = fieldsOf(text, eol + 2, 502);
  let length = -1;
  let transfer: string | null = null;
  let connection: string[] | null = null;
  for (const field of fields) {
    if (field.lower === 'content-length') length = lengthOf(length, field.value, 502);
    else if (field.lower === 'transfer-encoding') transfer = transfer === null ? field.value : `${transfer},${field.value}`;
    else if (field.lower === 'connection') connection = connection === null ? tokens(field.value) : [...connection, ...tokens(field.value)];
  }
  let chunked = false;
  let close = false;
  if (transfer !== null) {
    // Transfer-Encoding overrides Content-Length; a coding list not ending in chunked runs until the connection closes.
    const codings = tokens(transfer);
    chunked = codings[codings.length - 1] === 'chunked';
    if (!chunked) close = true;
    length = -1;
  }
  const listed = connectionListed(connection);
  if (listed?.has('close') === true || (minor === 0 && listed?.has('keep-alive') !== true)) close = true;
  return { minor, status: Number(code), reason, fields, length, chunked, close, listed };
}

/** True when an answer to this request and with this status has no body, whatever its headers say. */
export function bodilessAnswer(method: string, status: number): boolean {
  return method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
}

const enum Chunk {
  Size,
  Extension,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  Trailer,
  TrailerLine,
  TrailerLf,
  EndLf,
  Done,
}

/** Chunk-size line extensions and trailers together may take at most this many bytes. */
const MAX_CHUNK_METADATA = 16 * 1024;

/**
 * Finds where a chunked body ends, reading it as it arrives in any number of pieces, without
 * copying or changing it: sizes are read, data is skipped. Strict: CRLF line ends only, hex
 * sizes (at most 13 digits), no spaces, a CRLF after each chunk's data, bounded extensions
 * and trailers.
 */
export class ChunkedScanner {
  private state = Chunk.Size;
  private digits = 0;
  private size = 0;
  private left = 0;
  private metadata = 0;

  /** True once the last chunk and the trailers went by. */
  get done(): boolean {
    return this.state === Chunk.Done;
  }

  /**
   * Reads `buffer` from `start`: returns the index just after the body's end when it lies in
   * this buffer, or -1 when the whole buffer is body and more is to come.
   * @throws HttpError (400) on a framing error.
   */
  scan(buffer: Buffer, start = 0): number {
    let i = start;
    const end = buffer.length;
    while (i < end) {
      switch (this.state) {
        case Chunk.Data: {
          const n = Math.min(this.left, end - i);
          this.left -= n;
          i += n;
          if (this.left === 0) this.state = Chunk.DataCr;
          continue;
        }
        case Chunk.Size: {
          const c = buffer[i] as number;
          const digit = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
          if (digit !== -1) {
            if (++this.digits > 13) throw new HttpError(400, 'chunk size too large');
            this.size = this.size * 16 + digit;
          } else if (this.digits === 0) {
            throw new HttpError(400, 'malformed chunk size');
          } else if (c === 59 /* ; */) {
            this.state = Chunk.Extension;
          } else if (c === 13) {
            this.state = Chunk.SizeLf;
          } else {
            throw new HttpError(400, 'malformed chunk size');
          }
          break;
        }
        case Chunk.Extension: {
          const c = buffer[i] as number;
          if (++this.metadata > MAX_CHUNK_METADATA) throw new HttpError(400, 'chunk extensions too long');
          if (c === 13) this.state = Chunk.SizeLf;
          else if (c === 10 || (c < 32 && c !== 9) || c === 127) throw new HttpError(400, 'malformed chunk extension');
          break;
        }
        case Chunk.SizeLf:
          if (buffer[i] !== 10) throw new HttpError(400, 'malformed chunk size line');
          if (this.size === 0) {
            this.state = Chunk.Trailer;
          } else {
            this.left = this.size;
            this.state = Chunk.Data;
          }
          this.size = 0;
          this.digits = 0;
          break;
        case Chunk.DataCr:
          if (buffer[i] !== 13) throw new HttpError(400, 'chunk data longer than its size');
          this.state = Chunk.DataLf;
          break;
        case Chunk.DataLf:
          if (buffer[i] !== 10) throw new HttpError(400, 'chunk data longer than its size');
          this.state = Chunk.Size;
          break;
        case Chunk.Trailer: {
          const c = buffer[i] as number;
          if (c === 13) this.state = Chunk.EndLf;
          else if (c === 10 || c === 32 || c === 9 || c === 58) throw new HttpError(400, 'malformed trailer');
          else this.state = Chunk.TrailerLine;
          if (++this.metadata > MAX_CHUNK_METADATA) throw new HttpError(400, 'trailers too long');
          break;
        }
        case Chunk.TrailerLine: {
          const c = buffer[i] as number;
          if (++this.metadata > MAX_CHUNK_METADATA) throw new HttpError(400, 'trailers too long');
          if (c === 13) this.state = Chunk.TrailerLf;
          else if (c === 10 || (c < 32 && c !== 9) || c === 127) throw new HttpError(400, 'malformed trailer');
          break;
        }
        case Chunk.TrailerLf:
          if (buffer[i] !== 10) throw new HttpError(400, 'malformed trailer');
          this.state = Chunk.Trailer;
          break;
        case Chunk.EndLf:
          if (buffer[i] !== 10) throw new HttpError(400, 'malformed end of chunked body');
          this.state = Chunk.Done;
          return i + 1;
        case Chunk.Done:
          return i;
      }
      i++;
    }
    return -1;
  }
}
