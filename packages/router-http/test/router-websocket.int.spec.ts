import { request, type IncomingMessage } from 'node:http';
import { type Socket } from 'node:net';
import { AppRouter } from '../src';
import {
  FakeRouteTable,
  deadTarget,
  readUntil,
  routerPerTest,
  type Upstream,
} from './support';

describe('AppRouter over HTTP', () => {
  let routes: FakeRouteTable;
  let router: AppRouter;
  let port: number;
  const { upstream } = routerPerTest((made) => {
    ({ routes, router, port } = made);
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

});
