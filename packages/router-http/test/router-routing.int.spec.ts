import { createHash } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { AppRouter } from '../src';
import {
  FakeRouteTable,
  RecordingLogger,
  described,
  pause,
  readUntil,
  routerPerTest,
  send,
} from './support';

describe('AppRouter over HTTP', () => {
  let routes: FakeRouteTable;
  let logger: RecordingLogger;
  let port: number;
  const { upstream } = routerPerTest((made) => {
    ({ routes, logger, port } = made);
  });

  describe('routing', () => {
    it('sends requests for an app\'s host name to its web processes in turn', async () => {
      const [a, b, c] = [await upstream('a'), await upstream('b'), await upstream('c')];
      routes.set('myapp.svc.test', 'myapp', [a.target, b.target, c.target]);

      const names: string[] = [];
      for (let i = 0; i < 6; i++) names.push(described(await send(port, { host: 'myapp.svc.test' })).name);

      expect(names).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    });

    it('keeps one turn per app', async () => {
      const [a, b, x, y] = [await upstream('a'), await upstream('b'), await upstream('x'), await upstream('y')];
      routes.set('one.svc.test', 'one', [a.target, b.target]);
      routes.set('two.svc.test', 'two', [x.target, y.target]);

      const names = [];
      for (const host of ['one.svc.test', 'one.svc.test', 'two.svc.test', 'one.svc.test', 'two.svc.test']) {
        names.push(described(await send(port, { host })).name);
      }

      expect(names).toEqual(['a', 'b', 'x', 'a', 'y']);
    });

    it('looks routes up by the host name in lower case, without port or trailing dot', async () => {
      const a = await upstream('a');
      routes.set('www.example.com', 'myapp', [a.target]);

      const res = await send(port, { host: 'WWW.Example.COM.:8080' });

      expect(res.status).toBe(200);
      expect(routes.asked).toEqual(['www.example.com']);
    });

    it('passes method, path with query, headers and body on, with the Host unchanged', async () => {
      const a = await upstream('a');
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const res = await send(port, {
        host: 'myapp.svc.test',
        method: 'PUT',
        path: '/items/7?x=1&y=%20',
        headers: { 'Content-Type': 'text/plain', 'X-Custom': 'kept', Cookie: 'a=1' },
        body: 'hello body',
      });

      const seen = described(res);
      expect(seen).toMatchObject({ method: 'PUT', url: '/items/7?x=1&y=%20', body: 'hello body' });
      expect(seen.headers).toMatchObject({ host: 'myapp.svc.test', 'x-custom': 'kept', cookie: 'a=1', 'content-type': 'text/plain' });
    });

    it('appends the client to X-Forwarded-For and sets X-Forwarded-Proto, -Host and -Port, replacing the client\'s', async () => {
      const a = await upstream('a');
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const first = described(await send(port, { host: `myapp.svc.test:${port}` }));
      const second = described(
        await send(port, {
          host: 'myapp.svc.test',
          headers: { 'X-Forwarded-For': '203.0.113.9', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'evil.example' },
        }),
      );

      expect(first.headers).toMatchObject({
        'x-forwarded-for': '127.0.0.1',
        'x-forwarded-proto': 'http',
        'x-forwarded-host': `myapp.svc.test:${port}`,
        'x-forwarded-port': String(port),
      });
      expect(second.headers).toMatchObject({ 'x-forwarded-for': '203.0.113.9, 127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'myapp.svc.test' });
    });

    it('drops hop-by-hop headers both ways, including those the Connection header names', async () => {
      const a = await upstream('a', (_req, res) => {
        res.setHeader('Connection', 'x-internal');
        res.setHeader('X-Internal', 'secret');
        res.setHeader('Keep-Alive', 'timeout=5');
        res.setHeader('X-Public', 'yes');
        res.end('ok');
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const res = await send(port, { host: 'myapp.svc.test', headers: { Connection: 'x-hop', 'X-Hop': '1', 'Proxy-Authorization': 'Basic Zm9v', TE: 'trailers' } });

      expect(res.headers['x-public']).toBe('yes');
      expect(res.headers['x-internal']).toBeUndefined();
      expect(a.seen[0]?.headers['x-hop']).toBeUndefined();
      expect(a.seen[0]?.headers['proxy-authorization']).toBeUndefined();
      expect(a.seen[0]?.headers.te).toBeUndefined();
    });

    it('passes the process\'s status, headers and cookies back', async () => {
      const a = await upstream('a', (_req, res) => {
        res.statusCode = 201;
        res.setHeader('Set-Cookie', ['a=1; Path=/', 'b=2; Path=/']);
        res.setHeader('Location', '/items/8');
        res.end('created');
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const res = await send(port, { host: 'myapp.svc.test', method: 'POST', body: '{}' });

      expect(res.status).toBe(201);
      expect(res.body).toBe('created');
      expect(res.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
      expect(res.headers.location).toBe('/items/8');
    });

    it('writes one log line per request with app, status, target and the path without query', async () => {
      const a = await upstream('a');
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      await send(port, { host: 'myapp.svc.test', path: '/secret?token=abc' });
      await pause(20);

      const line = logger.lines.find((l) => l.msg === 'routed');
      expect(line?.obj).toMatchObject({ app: 'myapp', host: 'myapp.svc.test', method: 'GET', path: '/secret', status: 200, target: `127.0.0.1:${a.target.port}`, attempts: 1 });
      expect(JSON.stringify(logger.lines)).not.toContain('token=abc');
    });
  });

  describe('its own answers', () => {
    it('answers 404 in plain text for a host name no app has, and for a request without Host', async () => {
      const unknown = await send(port, { host: 'nobody.svc.test' });
      const socket = connect(port, '127.0.0.1');
      socket.write('GET / HTTP/1.0\r\n\r\n');
      const raw = await readUntil(socket, () => false);

      expect(unknown.status).toBe(404);
      expect(unknown.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(unknown.body).toBe('No app is served at nobody.svc.test.\n');
      expect(raw).toMatch(/^HTTP\/1\.1 404 /);
    });

    it('answers 503 in plain text when no web process of the app is up', async () => {
      routes.set('myapp.svc.test', 'myapp', []);

      const res = await send(port, { host: 'myapp.svc.test' });

      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toBe('No web process of myapp is running.\n');
    });

    it('asks again about an app it knew with no process (listed before its first process started) before answering 503', async () => {
      // The table lists the app with no process yet; the router holds that route.
      const listing: Array<[string, { app: string; targets: Array<{ host: string; port: number }> }]> = [['late.svc.test', { app: 'late', targets: [] }]];
      const listed = Object.assign(new FakeRouteTable(), { list: async () => listing });
      listed.set('late.svc.test', 'late', []);
      const own = new AppRouter({ routes: listed, logger, connectTimeoutMs: 1000, routeRefreshMs: 0 });
      const ownPort = (await own.listen(0, '127.0.0.1')).port;
      try {
        expect((await send(ownPort, { host: 'late.svc.test' })).status).toBe(503);
        // Its first process is up: the next request is served at once, not after the next refresh.
        const web = await upstream('late');
        listed.set('late.svc.test', 'late', [web.target]);
        await new Promise((resolve) => setTimeout(resolve, 300));
        const res = await send(ownPort, { host: 'late.svc.test' });
        expect([res.status, (JSON.parse(res.body) as { name: string }).name]).toEqual([200, 'late']);
        // Looked up once per quarter of a second, not once per request.
        const asked = listed.asked.length;
        listed.set('late.svc.test', 'late', []);
        await new Promise((resolve) => setTimeout(resolve, 300));
        await Promise.all([1, 2, 3, 4, 5].map(() => send(ownPort, { host: 'late.svc.test' })));
        expect(listed.asked.length - asked).toBeLessThanOrEqual(2);
      } finally {
        await own.close(1000);
      }
    });

    it('answers 503 when the route table fails, and logs why', async () => {
      routes.failure = new Error('database away');

      const res = await send(port, { host: 'myapp.svc.test' });

      expect(res.status).toBe(503);
      expect(res.body).toMatch(/cannot look up/);
      expect(logger.lines.some((l) => l.level === 'error' && l.msg === 'route lookup failed')).toBe(true);
    });

    it('answers HEAD with the status and no body', async () => {
      const res = await send(port, { host: 'nobody.svc.test', method: 'HEAD' });

      expect(res.status).toBe(404);
      expect(res.body).toBe('');
    });
  });

  describe('streaming', () => {
    it('streams a large request body to the process and its answer back, intact', async () => {
      const a = await upstream('a', (_req, res, body) => {
        res.end(createHash('sha256').update(body).digest('hex') + ` ${Buffer.byteLength(body)}`);
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);
      const body = 'abcdefghij'.repeat(600_000);

      const res = await send(port, { host: 'myapp.svc.test', method: 'POST', body });

      expect(res.body).toBe(`${createHash('sha256').update(body).digest('hex')} ${body.length}`);
    });

    it('hands the first part of an answer to the client before the process has written the rest', async () => {
      let finish: (() => void) | undefined;
      const a = await upstream('a', (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('first part\n');
        finish = () => res.end('last part\n');
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const firstChunk = await new Promise<{ text: string; res: IncomingMessage }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, headers: { Host: 'myapp.svc.test' }, agent: false }, (res) => {
          res.once('data', (chunk: Buffer) => resolve({ text: chunk.toString('utf8'), res }));
        });
        req.on('error', reject);
        req.end();
      });
      let rest = '';
      firstChunk.res.on('data', (chunk: Buffer) => {
        rest += chunk.toString('utf8');
      });
      const ended = new Promise((resolve) => firstChunk.res.once('end', resolve));
      finish?.();
      await ended;

      expect(firstChunk.text).toBe('first part\n');
      expect(rest).toBe('last part\n');
    });
  });

});
