import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { AppRouter } from '../src';
import { FakeRouteTable, pause, startUpstream, type Upstream } from './support';

/** One request from a given local address, on its own connection. */
function get(port: number, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, localAddress, headers: { Host: 'myapp.svc.test' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A connection that sends the start of a request and then nothing more, the way a slowloris does. */
function slowloris(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress }, () => {
      socket.write('GET / HTTP/1.1\r\nHost: myapp.svc.test\r\nX-Slow: ');
      resolve(socket);
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
    socket.resume();
  });
}

const closed = (socket: Socket): Promise<void> => new Promise((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

describe('AppRouter connection limits', () => {
  let routes: FakeRouteTable;
  let app: Upstream;
  let router: AppRouter;
  let port: number;
  const sockets: Socket[] = [];

  beforeEach(async () => {
    routes = new FakeRouteTable();
    app = await startUpstream('web');
    routes.set('myapp.svc.test', 'myapp', [app.target]);
  });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await router.close(500);
    app.server.closeAllConnections();
    await app.close();
  });

  it('refuses connections beyond the limit per client address, while other addresses are served', async () => {
    router = new AppRouter({ routes, limits: { maxConnectionsPerClient: 20, headersTimeoutMs: 60_000 } });
    ({ port } = await router.listen(0, '127.0.0.1'));
    for (let i = 0; i < 20; i++) sockets.push(await slowloris(port, '127.0.0.2'));
    await pause(100);

    const beyond = await slowloris(port, '127.0.0.2');
    sockets.push(beyond);
    await closed(beyond);
    const other = await Promise.all(Array.from({ length: 5 }, () => get(port, '127.0.0.3')));

    expect(beyond.destroyed).toBe(true);
    expect(other).toEqual([200, 200, 200, 200, 200]);
    expect(sockets.slice(0, 20).every((socket) => !socket.destroyed)).toBe(true);
  }, 30_000);

  it('keeps the reserved places for addresses that hold no connection: many addresses fill the rest, a fresh one still gets through', async () => {
    router = new AppRouter({ routes, limits: { maxConnections: 80, maxConnectionsPerClient: 10, reservedConnections: 40, headersTimeoutMs: 60_000 } });
    ({ port } = await router.listen(0, '127.0.0.1'));
    // Twenty addresses, two connections each, below their own cap: the shared part (80 - 40) is full.
    const held = Array.from({ length: 20 }, (_, i) => `127.0.0.${10 + i}`);
    for (const address of held) for (let i = 0; i < 2; i++) sockets.push(await slowloris(port, address));
    await pause(100);

    const fromHeld = await slowloris(port, '127.0.0.10');
    sockets.push(fromHeld);
    await closed(fromHeld);
    const fresh = await Promise.all(['127.0.0.100', '127.0.0.101', '127.0.0.102'].map((address) => get(port, address)));

    expect(fromHeld.destroyed).toBe(true);
    expect(fresh).toEqual([200, 200, 200]);
    expect(sockets.slice(0, 40).every((socket) => !socket.destroyed)).toBe(true);
  }, 30_000);

  it('closes connections that do not finish their headers within the headers timeout', async () => {
    router = new AppRouter({ routes, limits: { headersTimeoutMs: 500 } });
    ({ port } = await router.listen(0, '127.0.0.1'));
    const slow = await slowloris(port, '127.0.0.2');
    sockets.push(slow);
    const started = Date.now();

    await closed(slow);

    expect(Date.now() - started).toBeLessThan(5000);
    expect(await get(port, '127.0.0.2')).toBe(200);
  }, 30_000);

  it('closes idle keep-alive connections after the idle timeout', async () => {
    router = new AppRouter({ routes, limits: { idleTimeoutMs: 500 } });
    ({ port } = await router.listen(0, '127.0.0.1'));
    const socket = connect({ host: '127.0.0.1', port });
    sockets.push(socket);
    socket.on('error', () => undefined);
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
    });
    socket.write('GET / HTTP/1.1\r\nHost: myapp.svc.test\r\n\r\n');
    const started = Date.now();

    await closed(socket);

    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(Date.now() - started).toBeLessThan(5000);
  }, 30_000);

  it('refuses connections beyond the total limit', async () => {
    router = new AppRouter({ routes, limits: { maxConnections: 5, headersTimeoutMs: 60_000 } });
    ({ port } = await router.listen(0, '127.0.0.1'));
    for (let i = 0; i < 5; i++) sockets.push(await slowloris(port, '127.0.0.2'));
    await pause(100);

    const beyond = await slowloris(port, '127.0.0.3');
    sockets.push(beyond);
    await closed(beyond);

    expect(beyond.destroyed).toBe(true);
    for (const socket of sockets.splice(0, 5)) socket.destroy();
    await pause(100);
    expect(await get(port, '127.0.0.3')).toBe(200);
  }, 30_000);
});
