import { createHash } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { AppRouter, type RouterLogger } from '../src';
import {
  FakeRouteTable,
  deadTarget,
  described,
  pause,
  readUntil,
  send,
  startUpstream,
  type Upstream,
} from './support';

/** A logger that keeps what it was given. */
class RecordingLogger implements RouterLogger {
  readonly lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg });
  }
}

describe('AppRouter over HTTP', () => {
  let routes: FakeRouteTable;
  let logger: RecordingLogger;
  let router: AppRouter;
  let port: number;
  const upstreams: Upstream[] = [];

  async function upstream(name: string, handler?: Parameters<typeof startUpstream>[1]): Promise<Upstream> {
    const started = await startUpstream(name, handler);
    upstreams.push(started);
    return started;
  }

  beforeEach(async () => {
    routes = new FakeRouteTable();
    logger = new RecordingLogger();
    router = new AppRouter({ routes, logger, connectTimeoutMs: 1000 });
    ({ port } = await router.listen(0, '127.0.0.1'));
  });

  afterEach(async () => {
    await router.close(1000);
    for (const u of upstreams.splice(0)) {
      u.server.closeAllConnections();
      await u.close();
    }
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

  describe('failures of processes', () => {
    it('answers 502 in plain text when the process closes the connection without answering', async () => {
      const a = await upstream('a', (req) => req.socket.destroy());
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const res = await send(port, { host: 'myapp.svc.test', method: 'POST', body: 'x' });

      expect(res.status).toBe(502);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toMatch(/^Bad gateway/);
    });

    it('cuts the client\'s connection when the process fails in the middle of its answer', async () => {
      const a = await upstream('a', (req, res) => {
        res.writeHead(200, { 'Content-Length': '100' });
        res.write('only part of it');
        setTimeout(() => req.socket.destroy(), 20);
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const outcome = await new Promise<{ complete: boolean; body: string }>((resolve) => {
        const req = request({ host: '127.0.0.1', port, headers: { Host: 'myapp.svc.test' }, agent: false }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString('utf8');
          });
          res.on('error', () => undefined);
          res.once('close', () => resolve({ complete: res.complete, body }));
        });
        req.on('error', () => undefined);
        req.end();
      });

      expect(outcome).toEqual({ complete: false, body: 'only part of it' });
    });

    it('tries the next process when one refuses the connection, for every method, body included', async () => {
      const dead = await deadTarget();
      const live = await upstream('live');
      routes.set('myapp.svc.test', 'myapp', [dead, live.target]);

      const results = [];
      for (let i = 0; i < 4; i++) {
        const res = await send(port, { host: 'myapp.svc.test', method: i % 2 === 0 ? 'GET' : 'POST', body: i % 2 === 0 ? undefined : `body ${i}` });
        results.push([res.status, described(res).name, described(res).body]);
      }

      expect(results).toEqual([
        [200, 'live', ''],
        [200, 'live', 'body 1'],
        [200, 'live', ''],
        [200, 'live', 'body 3'],
      ]);
    });

    it('looks the route up again when every process refused, and reaches the new ones', async () => {
      const dead = await deadTarget();
      const live = await upstream('live');
      routes.set('myapp.svc.test', 'myapp', [dead]);
      const resolve = routes.resolve.bind(routes);
      let calls = 0;
      routes.resolve = async (host) => {
        calls += 1;
        if (calls === 2) routes.set('myapp.svc.test', 'myapp', [dead, live.target]);
        return resolve(host);
      };

      const res = await send(port, { host: 'myapp.svc.test' });

      expect(res.status).toBe(200);
      expect(described(res).name).toBe('live');
      expect(calls).toBe(2);
    });

    it('answers 503 when no process accepts the connection', async () => {
      routes.set('myapp.svc.test', 'myapp', [await deadTarget(), await deadTarget()]);

      const res = await send(port, { host: 'myapp.svc.test' });

      expect(res.status).toBe(503);
      expect(res.body).toBe('No web process of myapp accepted the connection.\n');
    });

    it('does not drop requests in flight while a deploy replaces the processes', async () => {
      const slow = (name: string) => (_req: IncomingMessage, res: import('node:http').ServerResponse, body: string): void => {
        setTimeout(() => res.end(`${name}:${body}`), 1000);
      };
      const old = await upstream('old', slow('old'));
      routes.set('myapp.svc.test', 'myapp', [old.target]);
      // Requests that the old process is working on when the deploy stops it (given time to reach it on a loaded machine).
      const inFlight = Array.from({ length: 5 }, (_, i) => send(port, { host: 'myapp.svc.test', method: 'POST', body: `early ${i}` }));
      for (let i = 0; i < 100 && old.seen.length < 5; i++) await pause(20);

      // The new process is up; the old one stops accepting while it finishes its requests.
      const fresh = await upstream('new', slow('new'));
      routes.set('myapp.svc.test', 'myapp', [old.target, fresh.target]);
      const stopping = old.close();
      // Requests racing the stop: the table still lists the old process for a while.
      const racing = Array.from({ length: 10 }, (_, i) => send(port, { host: 'myapp.svc.test', method: i % 2 === 0 ? 'GET' : 'POST', body: `late ${i}` }));
      await stopping;
      routes.set('myapp.svc.test', 'myapp', [fresh.target]);
      const after = Array.from({ length: 5 }, (_, i) => send(port, { host: 'myapp.svc.test', method: 'POST', body: `after ${i}` }));

      const early = await Promise.all(inFlight);
      const late = await Promise.all(racing);
      const settled = await Promise.all(after);

      expect(early.map((r) => [r.status, r.body])).toEqual(Array.from({ length: 5 }, (_, i) => [200, `old:early ${i}`]));
      expect(late.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(late.filter((_, i) => i % 2 === 1).map((r) => r.body.split(':')[1])).toEqual(['late 1', 'late 3', 'late 5', 'late 7', 'late 9']);
      expect(settled.map((r) => r.body)).toEqual(Array.from({ length: 5 }, (_, i) => `new:after ${i}`));
    });
  });

  describe('WebSocket upgrades', () => {
    /** An upstream that accepts upgrades and echoes every byte back with a prefix. */
    async function echoing(name: string): Promise<Upstream & { upgrades: IncomingMessage[] }> {
      const u = await upstream(name);
      const upgrades: IncomingMessage[] = [];
      u.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
        upgrades.push(req);
        socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Echo: ' + name + '\r\n\r\n');
        if (head.length > 0) socket.write(`${name}:${head.toString('utf8')}`);
        socket.on('data', (chunk: Buffer) => socket.write(`${name}:${chunk.toString('utf8')}`));
        socket.on('end', () => socket.end());
        socket.on('error', () => undefined);
      });
      return Object.assign(u, { upgrades });
    }

    function handshake(host: string): Promise<{ socket: Socket; response: IncomingMessage } | { refused: IncomingMessage; body: Promise<string> }> {
      return new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, headers: { Host: host, Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13' }, agent: false });
        req.once('upgrade', (response: IncomingMessage, socket: Socket) => resolve({ socket, response }));
        req.once('response', (refused: IncomingMessage) => {
          const body = new Promise<string>((done) => {
            let text = '';
            refused.on('data', (chunk: Buffer) => {
              text += chunk.toString('utf8');
            });
            refused.once('end', () => done(text));
          });
          resolve({ refused, body });
        });
        req.once('error', reject);
        req.end();
      });
    }

    it('passes the upgrade through and then relays bytes both ways', async () => {
      const ws = await echoing('ws');
      routes.set('myapp.svc.test', 'myapp', [ws.target]);

      const result = await handshake('myapp.svc.test');
      if (!('socket' in result)) throw new Error(`upgrade refused with ${result.refused.statusCode}`);
      result.socket.write('hello');
      const echoed = await readUntil(result.socket, (text) => text.includes('ws:hello'));
      result.socket.write('again');
      const more = await readUntil(result.socket, (text) => text.includes('ws:again'));
      result.socket.destroy();

      expect(result.response.statusCode).toBe(101);
      expect(result.response.headers['x-echo']).toBe('ws');
      expect(echoed).toBe('ws:hello');
      expect(more).toBe('ws:again');
      expect(ws.upgrades[0]?.headers).toMatchObject({ upgrade: 'websocket', 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', host: 'myapp.svc.test' });
    });

    it('tries the next process when one refuses the connection', async () => {
      const ws = await echoing('ws');
      routes.set('myapp.svc.test', 'myapp', [await deadTarget(), ws.target]);

      const result = await handshake('myapp.svc.test');
      if (!('socket' in result)) throw new Error('upgrade refused');
      result.socket.write('ping');
      const echoed = await readUntil(result.socket, (text) => text.includes('ws:ping'));
      result.socket.destroy();

      expect(echoed).toBe('ws:ping');
    });

    it('answers 404 and 503 to upgrades as to requests', async () => {
      routes.set('idle.svc.test', 'idle', []);

      const unknown = await handshake('nobody.svc.test');
      const idle = await handshake('idle.svc.test');

      if ('socket' in unknown || 'socket' in idle) throw new Error('unexpected upgrade');
      expect(unknown.refused.statusCode).toBe(404);
      expect(await unknown.body).toBe('No app is served at nobody.svc.test.\n');
      expect(idle.refused.statusCode).toBe(503);
    });

    it('passes a process\'s refusal of the upgrade on to the client', async () => {
      const plain = await upstream('plain', (_req, res) => {
        res.statusCode = 426;
        res.end('no websockets here');
      });
      routes.set('myapp.svc.test', 'myapp', [plain.target]);

      const result = await handshake('myapp.svc.test');

      if ('socket' in result) throw new Error('unexpected upgrade');
      expect(result.refused.statusCode).toBe(426);
      expect(await result.body).toBe('no websockets here');
    });

    it('closing the router closes open tunnels', async () => {
      const ws = await echoing('ws');
      routes.set('myapp.svc.test', 'myapp', [ws.target]);
      const result = await handshake('myapp.svc.test');
      if (!('socket' in result)) throw new Error('upgrade refused');
      const closed = new Promise<void>((resolve) => result.socket.once('close', () => resolve()));

      await router.close(1000);
      await closed;

      expect(result.socket.destroyed).toBe(true);
    });
  });

  describe('closing', () => {
    it('lets a request in flight finish, then refuses new connections', async () => {
      const a = await upstream('a', (_req, res) => {
        setTimeout(() => res.end('finished'), 150);
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);
      const inFlight = send(port, { host: 'myapp.svc.test' });
      await pause(50);

      await router.close(2000);

      expect((await inFlight).body).toBe('finished');
      await expect(send(port, { host: 'myapp.svc.test' })).rejects.toThrow(/ECONNREFUSED/);
    });
  });

  describe('connections to processes', () => {
    it('keeps connections to a process and reuses them for later requests', async () => {
      const a = await upstream('a');
      let connections = 0;
      a.server.on('connection', () => {
        connections += 1;
      });
      routes.set('myapp.svc.test', 'myapp', [a.target]);

      const statuses = [];
      for (let i = 0; i < 10; i++) statuses.push((await send(port, { host: 'myapp.svc.test' })).status);

      expect(statuses).toEqual(Array(10).fill(200));
      expect(connections).toBe(1);
    });

    it('sends a GET again on a new connection when the process closed the kept one, and a POST always on a new connection', async () => {
      // A raw process that answers the first request of each connection, keeps it open, and
      // closes it without answering when a second request arrives on it.
      const answered: string[] = [];
      const raw = createServer((socket) => {
        let requests = 0;
        socket.on('error', () => undefined);
        socket.on('data', (chunk: Buffer) => {
          requests += 1;
          if (requests > 1) {
            socket.destroy();
            return;
          }
          answered.push(chunk.toString('utf8').split(' ')[0] ?? '');
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
        });
      });
      await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', () => resolve()));
      routes.set('myapp.svc.test', 'myapp', [{ host: '127.0.0.1', port: (raw.address() as AddressInfo).port }]);

      const first = await send(port, { host: 'myapp.svc.test' });
      const retried = await send(port, { host: 'myapp.svc.test' });
      const posted = await send(port, { host: 'myapp.svc.test', method: 'POST', body: 'once' });
      raw.close();

      expect([first.status, retried.status, posted.status]).toEqual([200, 200, 200]);
      expect(answered).toEqual(['GET', 'GET', 'POST']);
    });
  });
});
