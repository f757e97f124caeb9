import { request, type IncomingMessage } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { AppRouter } from '../src';
import {
  FakeRouteTable,
  deadTarget,
  described,
  pause,
  routerPerTest,
  send,
} from './support';

describe('AppRouter over HTTP', () => {
  let routes: FakeRouteTable;
  let router: AppRouter;
  let port: number;
  const { upstream } = routerPerTest((made) => {
    ({ routes, router, port } = made);
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
