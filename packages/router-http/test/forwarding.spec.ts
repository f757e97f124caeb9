import {
  HOP_BY_HOP,
  answerBody,
  answerConnection,
  dropsContentLength,
  forwardedAnswerHead,
  forwardedFor,
  forwardedHost,
  forwardedPort,
  forwardedProto,
  forwardedRequestHead,
  isAnsweredExpect,
  isConnectionListed,
  isHopByHop,
  isSetByRouter,
  passesTransferEncoding,
  requestConnection,
} from '../src/forwarding';
import { parseRequestHead, parseResponseHead } from '../src/http1';

const client = { address: '10.0.0.7', port: '8080', secure: false };
const request = (...lines: string[]): ReturnType<typeof parseRequestHead> => parseRequestHead(lines.join('\r\n'));
const headerLines = (head: string): string[] => head.split('\r\n').slice(1).filter((line) => line !== '');

describe('isHopByHop', () => {
  it('says what HOP_BY_HOP says', () => {
    for (const name of HOP_BY_HOP) expect(isHopByHop(name)).toBe(true);
    for (const name of ['content-length', 'host', 'x-connection', 'tee', 'upgrades', '']) expect(isHopByHop(name)).toBe(false);
  });
});

describe('one rule per header', () => {
  it('isConnectionListed drops what a Connection header lists, nothing without one', () => {
    expect(isConnectionListed('x-other', new Set(['x-other']))).toBe(true);
    expect(isConnectionListed('x-other', null)).toBe(false);
  });

  it('isAnsweredExpect drops Expect only', () => {
    expect([isAnsweredExpect('expect'), isAnsweredExpect('expect-ct')]).toEqual([true, false]);
  });

  it('isSetByRouter names the four X-Forwarded headers the router sets', () => {
    expect(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port'].every(isSetByRouter)).toBe(true);
    expect(['x-forwarded-by', 'forwarded', 'x-real-ip'].some(isSetByRouter)).toBe(false);
  });

  it('forwardedFor appends the client to the chain; Proto, Host and Port say how the router was reached', () => {
    expect(forwardedFor('', '10.0.0.7')).toBe('10.0.0.7');
    expect(forwardedFor('1.1.1.1, 2.2.2.2', '10.0.0.7')).toBe('1.1.1.1, 2.2.2.2, 10.0.0.7');
    expect([forwardedProto(true), forwardedProto(false)]).toEqual(['https', 'http']);
    expect([forwardedHost('a.test:8080'), forwardedHost(undefined)]).toEqual(['a.test:8080', null]);
    expect([forwardedPort('443'), forwardedPort('')]).toEqual(['443', null]);
  });

  it('requestConnection keeps chunking, asks for the upgrade again, and keeps HTTP/1.0 connections', () => {
    expect(requestConnection({ chunked: true, upgrade: null, minor: 1 })).toBe('Transfer-Encoding: chunked\r\n');
    expect(requestConnection({ chunked: false, upgrade: 'websocket', minor: 1 })).toBe('Connection: Upgrade\r\nUpgrade: websocket\r\n');
    expect(requestConnection({ chunked: false, upgrade: null, minor: 0 })).toBe('Connection: keep-alive\r\n');
    expect(requestConnection({ chunked: false, upgrade: null, minor: 1 })).toBe('');
  });

  it('answerBody frames bodiless, chunked, counted and until-close answers', () => {
    expect(answerBody('HEAD', { status: 200, chunked: true, length: -1 })).toBe('none');
    expect(answerBody('GET', { status: 304, chunked: false, length: 10 })).toBe('none');
    expect(answerBody('GET', { status: 200, chunked: true, length: -1 })).toBe('chunked');
    expect(answerBody('GET', { status: 200, chunked: false, length: 0 })).toBe('length');
    expect(answerBody('GET', { status: 200, chunked: false, length: -1 })).toBe('until-close');
  });

  it('passesTransferEncoding and dropsContentLength reframe only what the router frames itself', () => {
    expect(['none', 'length', 'chunked', 'until-close'].map((mode) => passesTransferEncoding(mode as 'none'))).toEqual([false, false, false, true]);
    expect(dropsContentLength('content-length', 'chunked')).toBe(true);
    expect(dropsContentLength('content-length', 'length')).toBe(false);
  });

  it('answerConnection names chunking and closes or keeps the client connection', () => {
    expect(answerConnection('chunked', true, 1)).toBe('Transfer-Encoding: chunked\r\n');
    expect(answerConnection('length', false, 1)).toBe('Connection: close\r\n');
    expect(answerConnection('length', true, 0)).toBe('Connection: keep-alive\r\n');
  });
});

describe('forwardedRequestHead', () => {
  it('keeps Host and Content-Length whatever Connection lists, and drops what else it lists', () => {
    const head = request('POST /x HTTP/1.1', 'Host: a.test', 'Connection: host, content-length, x-other', 'Content-Length: 3', 'X-Other: 1', 'Accept: */*');
    expect(headerLines(forwardedRequestHead(head, client))).toEqual([
      'Host: a.test',
      'Content-Length: 3',
      'Accept: */*',
      'X-Forwarded-For: 10.0.0.7',
      'X-Forwarded-Proto: http',
      'X-Forwarded-Host: a.test',
      'X-Forwarded-Port: 8080',
    ]);
  });

  it('drops hop-by-hop headers and Expect, keeps the client chain and replaces its other X-Forwarded headers', () => {
    const head = request(
      'GET / HTTP/1.1',
      'Host: a.test',
      'Keep-Alive: timeout=5',
      'TE: trailers',
      'Expect: 100-continue',
      'X-Forwarded-For: 1.1.1.1',
      'X-Forwarded-For: 2.2.2.2',
      'X-Forwarded-Proto: https',
      'X-Forwarded-Host: evil.test',
      'X-Forwarded-Port: 1',
    );
    const text = forwardedRequestHead(head, { ...client, secure: true, port: '' });
    expect(text.startsWith('GET / HTTP/1.1\r\n')).toBe(true);
    expect(text.endsWith('\r\n\r\n')).toBe(true);
    expect(headerLines(text)).toEqual(['Host: a.test', 'X-Forwarded-For: 1.1.1.1, 2.2.2.2, 10.0.0.7', 'X-Forwarded-Proto: https', 'X-Forwarded-Host: a.test']);
  });
});

describe('forwardedAnswerHead', () => {
  it('drops hop-by-hop and Connection-listed headers, reframes a chunked answer and closes when told', () => {
    const response = parseResponseHead('HTTP/1.1 200 OK\r\nConnection: x-trace\r\nX-Trace: 1\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain');
    expect(headerLines(forwardedAnswerHead(response, 'chunked', false, 1))).toEqual(['Content-Type: text/plain', 'Transfer-Encoding: chunked', 'Connection: close']);
  });

  it('passes Transfer-Encoding on for a body that runs until close', () => {
    const response = parseResponseHead('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Type: text/plain');
    expect(headerLines(forwardedAnswerHead(response, 'until-close', false, 1))).toEqual(['Transfer-Encoding: gzip', 'Content-Type: text/plain', 'Connection: close']);
  });
});
