import { connectionListed } from '../src/connection-header';
import { ChunkedScanner, HttpError, bodilessAnswer, headEnd, parseRequestHead, parseResponseHead } from '../src/http1';

/** The head of a request as the relay hands it to the parser: without its final empty line. */
const head = (...lines: string[]): string => lines.join('\r\n');

function refusal(text: string, parse: (text: string) => unknown = parseRequestHead): number | null {
  try {
    parse(text);
    return null;
  } catch (error) {
    if (error instanceof HttpError) return error.status;
    throw error;
  }
}

describe('parseRequestHead', () => {
  it('reads method, target, version, Host and the fields in order, names as sent', () => {
    const parsed = parseRequestHead(head('GET /a/b?x=1 HTTP/1.1', 'Host: App.Example.com', 'X-Custom:  kept value\t', 'accept: */*'));

    expect(parsed).toMatchObject({ method: 'GET', target: '/a/b?x=1', minor: 1, host: 'App.Example.com', length: 0, chunked: false, keepAlive: true, upgrade: null });
    expect(parsed.fields.map((f) => [f.name, f.value])).toEqual([
      ['Host', 'App.Example.com'],
      ['X-Custom', 'kept value'],
      ['accept', '*/*'],
    ]);
  });

  it('frames a body by Content-Length, repeated identical values included, or by chunked', () => {
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 12')).length).toBe(12);
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 7, 7', 'Content-Length: 7')).length).toBe(7);
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: Chunked')).chunked).toBe(true);
  });

  it('keeps HTTP/1.1 connections unless asked to close, and HTTP/1.0 ones only when asked to keep them', () => {
    expect(parseRequestHead(head('GET / HTTP/1.1', 'Host: a', 'Connection: close')).keepAlive).toBe(false);
    expect(parseRequestHead(head('GET / HTTP/1.0')).keepAlive).toBe(false);
    expect(parseRequestHead(head('GET / HTTP/1.0', 'Connection: Keep-Alive')).keepAlive).toBe(true);
  });

  it('sees an upgrade only with both Connection: upgrade and Upgrade, and lists the hop-by-hop names of Connection', () => {
    const upgrade = parseRequestHead(head('GET /ws HTTP/1.1', 'Host: a', 'Connection: keep-alive, Upgrade', 'Upgrade: websocket'));
    const notReally = parseRequestHead(head('GET /ws HTTP/1.1', 'Host: a', 'Upgrade: websocket'));

    expect(upgrade.upgrade).toBe('websocket');
    expect([...(upgrade.listed ?? [])]).toEqual(['keep-alive', 'upgrade']);
    expect(notReally.upgrade).toBeNull();
  });

  it('gives names in lower case and values without surrounding spaces and tabs', () => {
    const parsed = parseRequestHead(head('GET / HTTP/1.1', 'HOST:\t a \t', 'x-lower: \t', 'Content-Length: 0012'));

    expect(parsed.fields.map((f) => [f.lower, f.value])).toEqual([
      ['host', 'a'],
      ['x-lower', ''],
      ['content-length', '0012'],
    ]);
    expect(parsed.length).toBe(12);
  });

  it('tolerates empty lines before the request line', () => {
    expect(parseRequestHead(head('', 'GET / HTTP/1.1', 'Host: a')).method).toBe('GET');
  });

  it.each([
    ['both Content-Length and Transfer-Encoding', head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 5', 'Transfer-Encoding: chunked')],
    ['Transfer-Encoding before Content-Length', head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked', 'Content-Length: 5')],
    ['conflicting Content-Lengths', head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 5', 'Content-Length: 6')],
    ['a Content-Length list that disagrees', head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 5, 6')],
    ['a signed Content-Length', head('POST / HTTP/1.1', 'Host: a', 'Content-Length: +5')],
    ['a hexadecimal Content-Length', head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 0x5')],
    ['an empty Content-Length', head('POST / HTTP/1.1', 'Host: a', 'Content-Length:')],
    ['a Content-Length beyond safe integers', head('POST / HTTP/1.1', 'Host: a', 'Content-Length: 99999999999999999')],
    ['chunked twice', head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked, chunked')],
    ['another coding before chunked', head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: gzip, chunked')],
    ['a coding that is not chunked', head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: xchunked')],
    ['Transfer-Encoding split over two headers', head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked', 'Transfer-Encoding: identity')],
    ['Transfer-Encoding in HTTP/1.0', head('POST / HTTP/1.0', 'Transfer-Encoding: chunked')],
    ['a space before the colon', head('POST / HTTP/1.1', 'Host: a', 'Content-Length : 5')],
    ['a tab in the name', head('POST / HTTP/1.1', 'Host: a', 'Transfer-Encoding\t: chunked')],
    ['a folded header line', head('GET / HTTP/1.1', 'Host: a', 'X-A: 1', ' continued')],
    ['a line without a colon', head('GET / HTTP/1.1', 'Host: a', 'garbage')],
    ['a bare LF inside a value', head('GET / HTTP/1.1', 'Host: a', 'X-A: 1\nTransfer-Encoding: chunked')],
    ['a bare CR inside a value', head('GET / HTTP/1.1', 'Host: a', 'X-A: 1\rX-B: 2')],
    ['a NUL in a value', head('GET / HTTP/1.1', 'Host: a', 'X-A: 1\u0000')],
    ['two Host headers', head('GET / HTTP/1.1', 'Host: a', 'Host: b')],
    ['no Host in HTTP/1.1', head('GET / HTTP/1.1')],
    ['HTTP/2.0 as a version', head('GET / HTTP/2.0', 'Host: a')],
    ['a lower-case version', head('GET / http/1.1', 'Host: a')],
    ['two spaces in the request line', head('GET  / HTTP/1.1', 'Host: a')],
    ['a space in the target', head('GET /a b HTTP/1.1', 'Host: a')],
    ['a target that is no path', head('GET a HTTP/1.1', 'Host: a')],
    ['CONNECT', head('CONNECT a:443 HTTP/1.1', 'Host: a')],
    ['a method with a separator', head('GE(T / HTTP/1.1', 'Host: a')],
    ['a control character in the target', head('GET /a\u0001 HTTP/1.1', 'Host: a')],
    ['a DEL in the target', head('GET /a\u007f HTTP/1.1', 'Host: a')],
    ['a byte beyond ASCII in a name', head('GET / HTTP/1.1', 'Host: a', 'X-\u00e9: 1')],
    ['an empty name', head('GET / HTTP/1.1', 'Host: a', ': 1')],
  ])('refuses %s with 400', (_what, text) => {
    expect(refusal(text)).toBe(400);
  });
});

describe('parseResponseHead', () => {
  it('reads status, reason, length and whether the process keeps the connection', () => {
    expect(parseResponseHead(head('HTTP/1.1 201 Created', 'Content-Length: 3'))).toMatchObject({ status: 201, reason: 'Created', length: 3, chunked: false, close: false });
    expect(parseResponseHead(head('HTTP/1.1 200 OK', 'Connection: close', 'Content-Length: 3')).close).toBe(true);
    expect(parseResponseHead(head('HTTP/1.0 200 OK', 'Content-Length: 3')).close).toBe(true);
    expect(parseResponseHead(head('HTTP/1.0 200 OK', 'Connection: keep-alive', 'Content-Length: 3')).close).toBe(false);
    expect(parseResponseHead(head('HTTP/1.1 204')).reason).toBe('');
  });

  it('lets chunked override Content-Length, and runs a body with another final coding until the connection closes', () => {
    expect(parseResponseHead(head('HTTP/1.1 200 OK', 'Content-Length: 3', 'Transfer-Encoding: chunked'))).toMatchObject({ chunked: true, length: -1, close: false });
    expect(parseResponseHead(head('HTTP/1.1 200 OK', 'Transfer-Encoding: gzip'))).toMatchObject({ chunked: false, length: -1, close: true });
  });

  it.each([
    ['a missing status', head('HTTP/1.1 OK')],
    ['a two-digit status', head('HTTP/1.1 20 OK')],
    ['no space after the status', head('HTTP/1.1 200OK')],
    ['another protocol', head('ICY 200 OK')],
    ['conflicting Content-Lengths', head('HTTP/1.1 200 OK', 'Content-Length: 3', 'Content-Length: 4')],
    ['a malformed header', head('HTTP/1.1 200 OK', 'Bad Header: 1')],
  ])('refuses %s with 502', (_what, text) => {
    expect(refusal(text, parseResponseHead)).toBe(502);
  });
});

describe('bodilessAnswer', () => {
  it('knows answers to HEAD, 204, 304 and 1xx have no body', () => {
    expect([bodilessAnswer('HEAD', 200), bodilessAnswer('GET', 204), bodilessAnswer('GET', 304), bodilessAnswer('GET', 103), bodilessAnswer('GET', 200)]).toEqual([true, true, true, true, false]);
  });
});

describe('headEnd', () => {
  it('finds the end of a head, or -1 while it is incomplete', () => {
    const bytes = Buffer.from('GET / HTTP/1.1\r\nHost: a\r\n\r\nrest');

    expect(headEnd(bytes)).toBe(bytes.length - 4);
    expect(headEnd(bytes.subarray(0, 20))).toBe(-1);
  });
});

describe('ChunkedScanner', () => {
  const body = '5\r\nhello\r\n1a;name=value\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: yes\r\n\r\n';

  /** Feeds the text in pieces of the given sizes; returns the end found, as an offset in the whole text. */
  function scanInPieces(text: string, sizes: (i: number) => number): number {
    const bytes = Buffer.from(text, 'latin1');
    const scanner = new ChunkedScanner();
    let offset = 0;
    for (let i = 0; offset < bytes.length; i++) {
      const piece = bytes.subarray(offset, Math.min(bytes.length, offset + sizes(i)));
      const end = scanner.scan(piece);
      if (end !== -1) return offset + end;
      offset += piece.length;
    }
    return -1;
  }

  it('finds the end of a chunked body, with extensions and trailers, in one piece', () => {
    const scanner = new ChunkedScanner();

    expect(scanner.scan(Buffer.from(`${body}GET / HTTP/1.1\r\n`))).toBe(body.length);
    expect(scanner.done).toBe(true);
  });

  it('finds the same end whatever the pieces the body arrives in, one byte at a time included', () => {
    const text = `${body}NEXT`;
    for (const size of [1, 2, 3, 5, 7, 11, 64]) expect(scanInPieces(text, () => size)).toBe(body.length);
    expect(scanInPieces(text, (i) => (i % 3) + 1)).toBe(body.length);
  });

  it('reads upper-case sizes and sizes with leading zeros', () => {
    const text = '00A\r\n0123456789\r\n000\r\n\r\n';

    expect(new ChunkedScanner().scan(Buffer.from(`${text}next`))).toBe(text.length);
  });

  it('says -1 while the body goes on', () => {
    const scanner = new ChunkedScanner();

    expect(scanner.scan(Buffer.from('10\r\n0123456789'))).toBe(-1);
    expect(scanner.scan(Buffer.from('abcdef\r\n0\r\n'))).toBe(-1);
    expect(scanner.scan(Buffer.from('\r\n'))).toBe(2);
  });

  it.each([
    ['a size that is not hexadecimal', 'g\r\nx\r\n0\r\n\r\n'],
    ['a negative size', '-1\r\nx\r\n0\r\n\r\n'],
    ['a space before the line end', '5 \r\nhello\r\n0\r\n\r\n'],
    ['a bare LF after the size', '5\nhello\r\n0\r\n\r\n'],
    ['data longer than its size', '3\r\nhello\r\n0\r\n\r\n'],
    ['data without its CRLF', '5\r\nhello0\r\n\r\n'],
    ['an empty size', '\r\nhello\r\n0\r\n\r\n'],
    ['a size beyond 13 hexadecimal digits', '10000000000000\r\n'],
    ['a bare LF in the trailers', '0\r\nX: 1\n\r\n'],
    ['a folded trailer', '0\r\n continued\r\n\r\n'],
  ])('refuses %s', (_what, text) => {
    expect(() => scanInPieces(text, () => 1)).toThrow(HttpError);
    expect(() => new ChunkedScanner().scan(Buffer.from(text, 'latin1'))).toThrow(HttpError);
  });

  it('refuses extensions and trailers beyond their bound', () => {
    expect(() => new ChunkedScanner().scan(Buffer.from(`1;${'x'.repeat(20_000)}\r\n`))).toThrow(HttpError);
    expect(() => new ChunkedScanner().scan(Buffer.from(`0\r\n${'X-A: 1\r\n'.repeat(3000)}\r\n`))).toThrow(HttpError);
  });
});

describe('Connection never drops Host nor Content-Length', () => {
  it('connectionListed leaves them out of the names a Connection header makes hop-by-hop', () => {
    expect(connectionListed(['keep-alive', 'host', 'content-length', 'x-other'])).toEqual(new Set(['keep-alive', 'x-other']));
    expect(connectionListed(null)).toBeNull();
  });

  it('a parsed request head lists neither, whatever case or header it came in', () => {
    const head = parseRequestHead('GET / HTTP/1.1\r\nHost: a.test\r\nConnection: HOST, Keep-Alive\r\nConnection: Content-Length\r\nContent-Length: 0');
    expect(head.listed).toEqual(new Set(['keep-alive']));
    expect(head.host).toBe('a.test');
  });
});
