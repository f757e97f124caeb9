import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppRouter, ControlSocket, NoController, RouterLink } from '../src';
import { FakeRouteTable, pause, send, startUpstream, until, type Upstream } from './support';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('ControlSocket and RouterLink: a router process of its own, served by a controller', () => {
  let directory: string;
  let path: string;
  let routes: FakeRouteTable;
  let upstream: Upstream;
  let control: ControlSocket;
  let router: AppRouter;
  let port: number;
  const links: RouterLink[] = [];
  const observed: Array<[string | null, number]> = [];

  const link = (table: FakeRouteTable = routes): RouterLink => {
    const made = new RouterLink({
      path,
      routes: table,
      certificates: { find: async (name) => (name === 'known.test' ? { certificate: 'CERT', key: 'KEY' } : null) },
      challenges: { answer: async (_host, token) => (token === 'tok' ? 'tok.thumb' : null) },
      observer: { request: (app, status) => void observed.push([app, status]) },
      retryMs: 50,
    });
    links.push(made);
    return made;
  };

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'svc-control-'));
    path = join(directory, 'router.sock');
    routes = new FakeRouteTable();
    upstream = await startUpstream('one');
    routes.set('app.test', 'app', [upstream.target]);
    let current: AppRouter | null = null;
    control = new ControlSocket({
      path,
      ports: () => ({ http: port, https: null }),
      routesChanged: () => current?.routesChanged() ?? Promise.resolve(),
      invalidateCertificate: (name) => current?.invalidateCertificate(name),
      logger: silent,
    });
    router = new AppRouter({ routes: control.routes, challenges: control.challenges, observer: control.observer, routeRefreshMs: 100, accessLog: false });
    current = router;
    ({ port } = await router.listen(0, '127.0.0.1'));
    await control.listen();
  });

  afterEach(async () => {
    for (const made of links.splice(0)) await made.close();
    await control.close();
    await router.close(0);
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('makes the socket readable and writable by its owner only', () => {
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('refuses every question until a controller serves, then routes with its answers and passes the request figures on', async () => {
    await expect(control.routes.resolve('app.test')).rejects.toBeInstanceOf(NoController);
    const controller = link();
    expect((await controller.listen(8080, '0.0.0.0')).port).toBe(port);
    // Connected but not serving yet (its apps are not up): still no answers.
    await expect(control.routes.resolve('app.test')).rejects.toBeInstanceOf(NoController);

    await controller.serve();

    expect(control.serving).toBe(true);
    expect((await send(port, { host: 'app.test' })).status).toBe(200);
    await expect(control.certificates.find('known.test')).resolves.toEqual({ certificate: 'CERT', key: 'KEY' });
    await expect(control.challenges.answer('app.test', 'tok')).resolves.toBe('tok.thumb');
    await until(() => observed.some(([app, status]) => app === 'app' && status === 200));
  });

  it('passes the controller\'s listing on (the very same array while nothing changed), and refuses it for a table that cannot list', async () => {
    // A table that lists: the same array again while nothing changed, as PlatformRouteTable gives.
    const listed: Array<[string, { app: string; targets: Array<{ host: string; port: number }> }]> = [['app.test', { app: 'app', targets: [upstream.target] }]];
    let listing = listed;
    const listingTable = Object.assign(new FakeRouteTable(), { list: async () => listing });
    const controller = link(listingTable);
    await controller.listen(8080, '0.0.0.0');
    await controller.serve();

    const first = await (control.routes.list as NonNullable<typeof control.routes.list>)();
    expect(first).toEqual(listed);
    const again = await (control.routes.list as NonNullable<typeof control.routes.list>)();
    // Not sent twice: the router gets back the very array it holds, which its route cache does not compare again.
    expect(again).toBe(first);

    listing = [...listed, ['new.test', { app: 'new', targets: [upstream.target] }]];
    const changed = await (control.routes.list as NonNullable<typeof control.routes.list>)();
    expect(changed.map(([host]) => host)).toEqual(['app.test', 'new.test']);
    expect(changed).not.toBe(first);

    // A controller whose table cannot list: the router is told so, and looks names up one by one.
    await controller.close();
    const plain = link();
    await plain.listen(8080, '0.0.0.0');
    await plain.serve();
    await until(() => control.serving);
    await expect((control.routes.list as NonNullable<typeof control.routes.list>)()).rejects.toThrow(/cannot list/);
    await expect(control.routes.resolve('app.test')).resolves.toMatchObject({ app: 'app' });
  });

  it('keeps serving the routes it knows while no controller is connected, answers 503 for a new host name, and takes the next controller\'s routes', async () => {
    const first = link();
    await first.serve();
    expect((await send(port, { host: 'app.test' })).status).toBe(200);

    await first.close();
    await until(() => !control.serving);
    // Several route refreshes pass with no controller: the known route stays.
    await pause(350);
    expect((await send(port, { host: 'app.test' })).status).toBe(200);
    expect((await send(port, { host: 'new.test' })).status).toBe(503);

    const two = await startUpstream('two');
    try {
      routes.set('app.test', 'app', [two.target]);
      routes.set('new.test', 'new', [two.target]);
      const next = link();
      await next.serve();
      // Serving means every worker has looked its routes up again: the new targets at once.
      expect((await send(port, { host: 'app.test' })).body).toContain('two');
      expect((await send(port, { host: 'new.test' })).status).toBe(200);
    } finally {
      await two.close();
    }
  });

  it('connects again by itself when the router restarts, and serves it at once', async () => {
    const controller = link();
    await controller.serve();
    await control.close();
    control = new ControlSocket({
      path,
      ports: () => ({ http: port, https: null }),
      routesChanged: () => router.routesChanged(),
      invalidateCertificate: () => undefined,
      logger: silent,
    });
    await control.listen();
    await until(() => control.serving);
    await expect(control.routes.resolve('app.test')).resolves.toMatchObject({ app: 'app' });
  });

  it('lets a newer controller replace an older one', async () => {
    const older = link();
    await older.serve();
    await expect(control.routes.resolve('other.test')).resolves.toBeNull();
    const newerRoutes = new FakeRouteTable();
    newerRoutes.set('other.test', 'other', [upstream.target]);
    const newer = link(newerRoutes);
    await newer.serve();
    expect(control.serving).toBe(true);
    await expect(control.routes.resolve('other.test')).resolves.toMatchObject({ app: 'other' });
    // The older one does not take the router back.
    await pause(300);
    await expect(control.routes.resolve('other.test')).resolves.toMatchObject({ app: 'other' });
    await expect(older.routesChanged()).resolves.toBeUndefined();
  });

  it('replaces a socket file no router answers on, and refuses one another router listens on or a file that is not a socket', async () => {
    await control.close();
    const options = { ports: () => ({ http: port, https: null }), routesChanged: async () => undefined, invalidateCertificate: () => undefined, logger: silent };
    // A router killed outright leaves its socket file behind: the next one starts anyway.
    spawnSync(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))", path]);
    expect(existsSync(path)).toBe(true);
    control = new ControlSocket({ path, ...options });
    await control.listen();

    await expect(new ControlSocket({ path, ...options }).listen()).rejects.toThrow(`another router listens on ${path}`);
    writeFileSync(join(directory, 'plain'), '');
    await expect(new ControlSocket({ path: join(directory, 'plain'), ...options }).listen()).rejects.toThrow('is not a socket');
  });
});
