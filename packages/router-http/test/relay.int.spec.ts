import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { AppRouter } from '../src';
import { FakeRouteTable, described, pause, readUntil, send, startUpstream, type Received, type Upstream } from './support';

/** Opens a raw connection to the router. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Counts the complete answers in raw bytes (each with a Content-Length). */
function answersIn(text: string): number {
  let count = 0;
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return count;
    const length = /content-length: (\d+)/i.exec(rest.slice(0, end));
    const total = end + 4 + Number(length?.[1] ?? 0);
    if (rest.length < total) return count;
    count += 1;
    rest = rest.slice(total);
  }
}

/** A raw process: answers every request it reads with the given bytes; records what it read. */
async function rawProcess(answer: (request: string) => string | null): Promise<{ port: number; read: string[]; server: Server }> {
  const read: string[] = [];
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      read.push(chunk.toString('latin1'));
      const bytes = answer(chunk.toString('latin1'));
      if (bytes !== null) socket.write(bytes, 'latin1');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { port: (server.address() as AddressInfo).port, read, server };
}

describe('the relay', () => {
  let routes: FakeRouteTable;
  let router: AppRouter;
  let port: number;
  let app: Upstream;
  const servers: Server[] = [];
  const sockets: Socket[] = [];

  beforeEach(async () => {
    routes = new FakeRouteTable();
    app = await startUpstream('web');
    routes.set('myapp.svc.test', 'myapp', [app.target]);
    router = new AppRouter({ routes, connectTimeoutMs: 1000 });
    ({ port } = await router.listen(0, '127.0.0.1'));
  });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await router.close(500);
    app.server.closeAllConnections();
    await app.close();
    for (const server of servers.splice(0)) server.close();
  });

  async function client(): Promise<Socket> {
    const socket = await open(port);
    socket.on('error', () => undefined);
    sockets.push(socket);
    return socket;
  }

  describe('pipelining', () => {
    it('answers requests sent together on one connection in order, each to its own path', async () => {
      const socket = await client();
      const paths = ['/one', '/two', '/three', '/four'];
      socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n`).join(''));

      const raw = await readUntil(socket, (text) => answersIn(text) === 4);

      const bodies = raw.split('\r\n\r\n').filter((part) => part.startsWith('{')).map((part) => JSON.parse(part.slice(0, part.lastIndexOf('}') + 1)) as { url: string });
      expect(bodies.map((b) => b.url)).toEqual(paths);
    });

    it('keeps a pipelined request that follows a body, and answers both in order', async () => {
      const socket = await client();
      socket.write('POST /first HTTP/1.1\r\nHost: myapp.svc.test\r\nContent-Length: 5\r\n\r\nhelloGET /second HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n');

      const raw = await readUntil(socket, (text) => answersIn(text) === 2);

      expect(raw.indexOf('"url":"/first"')).toBeLessThan(raw.indexOf('"url":"/second"'));
      expect(app.seen.map((s) => [s.method, s.url, s.body])).toEqual([
        ['POST', '/first', 'hello'],
        ['GET', '/second', ''],
      ]);
    });

    it('answers a request whose head arrives a byte at a time', async () => {
      const socket = await client();
      const request = 'GET /slow HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n';
      const answer = readUntil(socket, (text) => answersIn(text) === 1);
      for (const byte of request) {
        socket.write(byte);
        await pause(1);
      }

      expect(await answer).toContain('"url":"/slow"');
    });
  });

  describe('bodies', () => {
    it('passes a chunked request body on as it is, whatever pieces it arrives in', async () => {
      const socket = await client();
      socket.write('POST /c HTTP/1.1\r\nHost: myapp.svc.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel');
      await pause(30);
      socket.write('lo\r\n6\r\n wor');
      await pause(30);
      socket.write('ld\r\n0\r\n\r\nGET /after HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n');

      const raw = await readUntil(socket, (text) => answersIn(text) === 2);

      expect(app.seen.map((s) => [s.url, s.body])).toEqual([
        ['/c', 'hello world'],
        ['/after', ''],
      ]);
      expect(app.seen[0]?.headers['transfer-encoding']).toBe('chunked');
      expect(raw).toContain('"url":"/after"');
    });

    it('passes a chunked answer back still chunked, and keeps both connections', async () => {
      const chunked = await startUpstream('chunked', (_req, res) => {
        res.write('part one, ');
        setTimeout(() => res.end('part two'), 20);
      });
      servers.push(chunked.server);
      routes.set('chunked.svc.test', 'chunked', [chunked.target]);
      let connections = 0;
      chunked.server.on('connection', () => {
        connections += 1;
      });

      const socket = await client();
      socket.write('GET / HTTP/1.1\r\nHost: chunked.svc.test\r\n\r\n');
      const first = await readUntil(socket, (text) => text.endsWith('0\r\n\r\n'));
      socket.write('GET / HTTP/1.1\r\nHost: chunked.svc.test\r\n\r\n');
      const second = await readUntil(socket, (text) => text.endsWith('0\r\n\r\n'));
      chunked.server.closeAllConnections();

      for (const raw of [first, second]) {
        expect(raw).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        expect(raw).toMatch(/\r\nTransfer-Encoding: chunked\r\n/i);
        expect(raw).toContain('part one, ');
        expect(raw).toContain('part two');
      }
      expect(connections).toBe(1);
    });

    it('sends no body for HEAD, 204 and 304 answers, whatever their headers say, and keeps the connection', async () => {
      const process = await rawProcess((request) => {
        if (request.startsWith('HEAD')) return 'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n';
        if (request.startsWith('GET /204')) return 'HTTP/1.1 204 No Content\r\n\r\n';
        return 'HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n';
      });
      servers.push(process.server);
      routes.set('raw.svc.test', 'raw', [{ host: '127.0.0.1', port: process.port }]);
      const socket = await client();

      socket.write('HEAD / HTTP/1.1\r\nHost: raw.svc.test\r\n\r\n');
      const head = await readUntil(socket, (text) => text.endsWith('\r\n\r\n'));
      socket.write('GET /204 HTTP/1.1\r\nHost: raw.svc.test\r\n\r\n');
      const noContent = await readUntil(socket, (text) => text.endsWith('\r\n\r\n'));
      socket.write('GET /304 HTTP/1.1\r\nHost: raw.svc.test\r\n\r\n');
      const notModified = await readUntil(socket, (text) => text.endsWith('\r\n\r\n'));

      expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\nContent-Length: 1000\r\n\r\n$/);
      expect(noContent).toMatch(/^HTTP\/1\.1 204 No Content\r\n\r\n$/);
      expect(notModified).toMatch(/^HTTP\/1\.1 304 Not Modified\r\n/);
      expect(socket.destroyed).toBe(false);
    });

    it('relays an answer that ends with the connection, then closes the client\'s', async () => {
      const process = await rawProcess(() => 'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end');
      process.server.on('connection', (socket: Socket) => socket.on('data', () => setTimeout(() => socket.end(), 20)));
      servers.push(process.server);
      routes.set('raw.svc.test', 'raw', [{ host: '127.0.0.1', port: process.port }]);
      const socket = await client();

      socket.write('GET / HTTP/1.1\r\nHost: raw.svc.test\r\n\r\n');
      const raw = await readUntil(socket, () => false);

      expect(raw).toMatch(/^HTTP\/1\.1 200 OK\r\nConnection: close\r\n\r\nuntil the end$/);
    });

    it('answers 100 Continue itself and does not pass Expect on', async () => {
      const socket = await client();
      socket.write('POST /e HTTP/1.1\r\nHost: myapp.svc.test\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n');
      const interim = await readUntil(socket, (text) => text.includes('\r\n\r\n'));
      socket.write('body');
      const answer = await readUntil(socket, (text) => answersIn(text) === 1);

      expect(interim).toBe('HTTP/1.1 100 Continue\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(app.seen[0]?.body).toBe('body');
      expect(app.seen[0]?.headers.expect).toBeUndefined();
    });
  });

  describe('hostile input', () => {
    const smuggling: Array<[string, string]> = [
      ['Content-Length and Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: myapp.svc.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n'],
      ['two different Content-Lengths', 'POST / HTTP/1.1\r\nHost: myapp.svc.test\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n'],
      ['an obfuscated Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: myapp.svc.test\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n'],
      ['a space before the colon', 'POST / HTTP/1.1\r\nHost: myapp.svc.test\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n'],
      ['a bad chunk size', 'POST / HTTP/1.1\r\nHost: myapp.svc.test\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n'],
      ['chunk data longer than its size', 'POST / HTTP/1.1\r\nHost: myapp.svc.test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxGET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n0\r\n\r\n'],
    ];

    it.each(smuggling)('answers 400 to %s, closes the connection and sends no request after it on', async (_what, bytes) => {
      const socket = await client();
      socket.write(bytes);

      const raw = await readUntil(socket, () => false);

      expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*Connection: close\r\n/);
      expect(answersIn(raw)).toBe(1);
      expect(app.seen.map((s) => s.url)).not.toContain('/smuggled');
    });

    it('answers 431 to a head larger than 16 KiB and closes the connection', async () => {
      const socket = await client();
      socket.write(`GET / HTTP/1.1\r\nHost: myapp.svc.test\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);

      const raw = await readUntil(socket, () => false);

      expect(raw).toMatch(/^HTTP\/1\.1 431 /);
      expect(app.seen).toHaveLength(0);
    });

    it('answers 400 to an HTTP/1.1 request without Host', async () => {
      const socket = await client();
      socket.write('GET / HTTP/1.1\r\n\r\n');

      expect(await readUntil(socket, () => false)).toMatch(/^HTTP\/1\.1 400 /);
    });

    const hostListed: Array<[string, string]> = [
      ['Connection: Host', 'Connection: Host\r\n'],
      ['Connection: keep-alive, HOST', 'Connection: keep-alive, HOST\r\n'],
      ['Host in a second Connection header', 'Connection: keep-alive\r\nConnection: x-other,host\r\n'],
    ];

    it.each(hostListed)('keeps Host whatever Connection lists (%s): the process gets the request for the routed app, Host included', async (_what, connection) => {
      const process = await rawProcess(() => 'HTTP/1.1 204 No Content\r\n\r\n');
      servers.push(process.server);
      routes.set('raw.svc.test', 'raw', [{ host: '127.0.0.1', port: process.port }]);
      const socket = await client();
      socket.write(`GET /mine HTTP/1.1\r\nHost: raw.svc.test\r\n${connection}X-Other: 1\r\n\r\n`);

      expect(await readUntil(socket, (text) => text.includes('\r\n\r\n'))).toMatch(/^HTTP\/1\.1 204 /);

      const forwarded = process.read.join('');
      expect(forwarded).toMatch(/^GET \/mine HTTP\/1\.1\r\n/);
      expect(forwarded).toMatch(/\r\nHost: raw\.svc\.test\r\n/);
      expect(forwarded).toMatch(/\r\nX-Forwarded-Host: raw\.svc\.test\r\n/);
      // Other names it lists are still dropped as hop-by-hop.
      if (connection.includes('x-other')) expect(forwarded).not.toMatch(/\r\nX-Other:/i);
    });

    it('keeps Content-Length when Connection lists it: the body stays a body, nothing is smuggled after it', async () => {
      const socket = await client();
      const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n';
      socket.write(`POST /upload HTTP/1.1\r\nHost: myapp.svc.test\r\nConnection: content-length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`);

      await readUntil(socket, (text) => answersIn(text) === 1);
      await pause(100);

      expect(app.seen.map((s) => [s.method, s.url, s.body])).toEqual([['POST', '/upload', smuggled]]);
      expect(app.seen[0]?.headers['content-length']).toBe(String(smuggled.length));
    });

    it("keeps a process's Content-Length when its Connection header lists it, so the client can frame the answer", async () => {
      const process = await rawProcess(() => 'HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello');
      servers.push(process.server);
      routes.set('raw.svc.test', 'raw', [{ host: '127.0.0.1', port: process.port }]);
      const socket = await client();
      socket.write('GET / HTTP/1.1\r\nHost: raw.svc.test\r\n\r\n');

      const raw = await readUntil(socket, (text) => text.endsWith('hello'));

      expect(raw).toMatch(/\r\nContent-Length: 5\r\n/);
      expect(answersIn(raw)).toBe(1);
    });

    it('answers 502 to a process\'s malformed answer', async () => {
      const process = await rawProcess(() => 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab');
      servers.push(process.server);
      routes.set('raw.svc.test', 'raw', [{ host: '127.0.0.1', port: process.port }]);

      const res = await send(port, { host: 'raw.svc.test' });

      expect(res.status).toBe(502);
    });
  });

  describe('HTTP/1.0 clients', () => {
    it('are answered and their connection closed, unless they ask to keep it and the answer has a length', async () => {
      const sized = await startUpstream('sized', (req, res) => {
        const body = `url ${req.url ?? ''}`;
        res.writeHead(200, { 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      });
      servers.push(sized.server);
      routes.set('myapp.svc.test', 'myapp', [sized.target]);
      const closing = await client();
      closing.write('GET /a HTTP/1.0\r\nHost: myapp.svc.test\r\n\r\n');
      const once = await readUntil(closing, () => false);

      const keeping = await client();
      keeping.write('GET /b HTTP/1.0\r\nHost: myapp.svc.test\r\nConnection: keep-alive\r\n\r\n');
      const first = await readUntil(keeping, (text) => answersIn(text) === 1);
      keeping.write('GET /c HTTP/1.0\r\nHost: myapp.svc.test\r\nConnection: keep-alive\r\n\r\n');
      const second = await readUntil(keeping, (text) => answersIn(text) === 1);

      expect(once).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close\r\n/);
      expect(first).toMatch(/Connection: keep-alive\r\n/);
      expect(second).toContain('url /c');
      expect(sized.seen.map((s) => s.url)).toEqual(['/a', '/b', '/c']);
    });
  });

  describe('answers of the router', () => {
    it('keeps the connection after a 404 to a request without a body, and closes it after one to a request with a body', async () => {
      const socket = await client();
      socket.write('GET / HTTP/1.1\r\nHost: nobody.svc.test\r\n\r\nGET / HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n');
      const both = await readUntil(socket, (text) => answersIn(text) === 2);
      const posting = await client();
      posting.write('POST / HTTP/1.1\r\nHost: nobody.svc.test\r\nContent-Length: 3\r\n\r\nabc');
      const closed = await readUntil(posting, () => false);

      expect(both).toMatch(/^HTTP\/1\.1 404 [\s\S]*HTTP\/1\.1 200 /);
      expect(closed).toMatch(/^HTTP\/1\.1 404 [\s\S]*Connection: close\r\n/);
    });
  });

  describe('limits towards processes', () => {
    it('opens at most maxSockets connections to a process; further requests wait for one and are answered', async () => {
      const slow = await startUpstream('slow', (req, res) => setTimeout(() => res.end(req.url), 100));
      servers.push(slow.server);
      let open = 0;
      let most = 0;
      slow.server.on('connection', (socket: Socket) => {
        open += 1;
        most = Math.max(most, open);
        socket.once('close', () => {
          open -= 1;
        });
      });
      routes.set('slow.svc.test', 'slow', [slow.target]);
      const limited = new AppRouter({ routes, upstream: { maxSockets: 2 } });
      const limitedPort = (await limited.listen(0, '127.0.0.1')).port;

      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => send(limitedPort, { host: 'slow.svc.test', path: `/${i}` })));
      await limited.close(500);

      expect(answers.map((a) => [a.status, a.body])).toEqual(Array.from({ length: 6 }, (_, i) => [200, `/${i}`]));
      expect(most).toBe(2);
    });
  });

  describe('clients that leave', () => {
    it('closes the request to the process and reports status 499, aborted, to the log and the observer', async () => {
      const lines: Array<Record<string, unknown>> = [];
      const observed: Array<[string | null, number]> = [];
      let processSawClose = false;
      const hanging = await startUpstream('hanging', (req) => {
        req.socket.once('close', () => {
          processSawClose = true;
        });
      });
      servers.push(hanging.server);
      routes.set('hang.svc.test', 'hang', [hanging.target]);
      const watched = new AppRouter({
        routes,
        logger: { info: (obj) => void lines.push(obj as Record<string, unknown>), warn: () => undefined, error: () => undefined },
        observer: { request: (app, status) => void observed.push([app, status]) },
      });
      const watchedPort = (await watched.listen(0, '127.0.0.1')).port;
      const socket = await open(watchedPort);
      socket.on('error', () => undefined);
      socket.write('GET /wait HTTP/1.1\r\nHost: hang.svc.test\r\n\r\n');
      for (let i = 0; i < 100 && hanging.seen.length === 0; i++) await pause(10);

      socket.destroy();
      for (let i = 0; i < 100 && !(processSawClose && observed.length > 0); i++) await pause(10);
      await watched.close(500);

      expect(processSawClose).toBe(true);
      expect(observed).toEqual([['hang', 499]]);
      expect(lines[0]).toMatchObject({ app: 'hang', path: '/wait', status: 499, aborted: true });
    });
  });

  it('serves many requests on kept connections both ways, with the same answers as sent one by one', async () => {
    const results: Received[] = [];
    for (let i = 0; i < 50; i++) results.push(await send(port, { host: 'myapp.svc.test', path: `/n/${i}` }));

    expect(results.map((r) => described(r).url)).toEqual(Array.from({ length: 50 }, (_, i) => `/n/${i}`));
  });
});
