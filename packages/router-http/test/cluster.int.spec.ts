import { ROUTES_PER_MESSAGE, RouterCluster, type ResolvedRoute } from '../src';
import { FakeRouteTable, described, pause, send, startUpstream, until, type Upstream } from './support';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('RouterCluster', () => {
  let routes: FakeRouteTable;
  let cluster: RouterCluster;
  let port: number;
  const observed: Array<[string | null, number]> = [];
  const upstreams: Upstream[] = [];

  beforeAll(async () => {
    routes = new FakeRouteTable();
    cluster = new RouterCluster({
      workers: 2,
      routes,
      routeRefreshMs: 200,
      logLevel: 'silent',
      observer: { request: (app, status) => void observed.push([app, status]) },
    });
    ({ port } = await cluster.listen(0, '127.0.0.1'));
  }, 60_000);

  afterAll(async () => {
    await cluster.close(1000);
    for (const u of upstreams) {
      u.server.closeAllConnections();
      await u.close();
    }
  });

  it('routes through its worker processes, which learn route changes from the controller', async () => {
    const a = await startUpstream('a');
    const b = await startUpstream('b');
    upstreams.push(a, b);
    routes.set('myapp.svc.test', 'myapp', [a.target]);

    const first = await send(port, { host: 'myapp.svc.test', path: '/x' });
    routes.set('myapp.svc.test', 'myapp', [b.target]);
    await cluster.routesChanged();
    await pause(100);
    const names = new Set<string>();
    for (let i = 0; i < 10; i++) names.add(described(await send(port, { host: 'myapp.svc.test' })).name);

    expect(first.status).toBe(200);
    expect(described(first)).toMatchObject({ name: 'a', url: '/x' });
    expect([...names]).toEqual(['b']);
    expect(cluster.pids()).toHaveLength(2);
    expect(cluster.pids()).not.toContain(process.pid);
  }, 60_000);

  it('answers 404 for unknown host names and reports every request to the observer', async () => {
    const unknown = await send(port, { host: 'nobody.svc.test' });
    // Workers send their figures about once a second.
    await until(() => observed.some(([app, status]) => app === null && status === 404) && observed.filter(([app, status]) => app === 'myapp' && status === 200).length >= 11);

    expect(unknown.status).toBe(404);
    expect(observed.filter(([app, status]) => app === 'myapp' && status === 200)).toHaveLength(11);
  }, 60_000);

  it('replaces a worker that dies, and stops every worker when closed', async () => {
    const [victim] = cluster.pids();
    if (victim === undefined) throw new Error('no worker');
    process.kill(victim, 'SIGKILL');
    await until(() => cluster.pids().length === 2 && !cluster.pids().includes(victim));
    // The new worker listens on the same port.
    await until(async () => {
      const results = await Promise.all(Array.from({ length: 6 }, () => send(port, { host: 'myapp.svc.test' }).catch(() => null)));
      return results.every((r) => r?.status === 200);
    });

    const pids = cluster.pids();
    await cluster.close(1000);

    expect(pids.some(alive)).toBe(false);
    await expect(send(port, { host: 'myapp.svc.test' })).rejects.toThrow(/ECONNREFUSED/);
  }, 60_000);
});

/** A route table that lists every route, as the platform's does. */
class ListingRouteTable extends FakeRouteTable {
  listings = 0;
  async list(): Promise<Array<[string, ResolvedRoute]>> {
    this.listings += 1;
    return [...this.routes].map(([host, route]) => [host, { ...route, targets: [...route.targets] }]);
  }
}

describe('RouterCluster over a route table that lists its routes', () => {
  const HOSTS = ROUTES_PER_MESSAGE * 2 + 500;
  let routes: ListingRouteTable;
  let cluster: RouterCluster;
  let port: number;
  let upstream: Upstream;
  const hostOf = (i: number): string => `app-${i}.svc.test`;
  const sample = [0, 1, ROUTES_PER_MESSAGE - 1, ROUTES_PER_MESSAGE, HOSTS - 2, HOSTS - 1].map(hostOf);

  beforeAll(async () => {
    upstream = await startUpstream('listed');
    routes = new ListingRouteTable();
    for (let i = 0; i < HOSTS; i++) routes.set(hostOf(i), `app-${i}`, [upstream.target]);
    cluster = new RouterCluster({ workers: 2, routes, routeRefreshMs: 60_000, logLevel: 'silent' });
    ({ port } = await cluster.listen(0, '127.0.0.1'));
  }, 60_000);

  afterAll(async () => {
    await cluster.close(1000);
    upstream.server.closeAllConnections();
    await upstream.close();
  });

  it('has its workers route every listed host name from the start, with no lookup of any (the table sent in pieces)', async () => {
    for (const host of sample) for (let i = 0; i < 4; i++) expect((await send(port, { host })).status).toBe(200);

    expect(routes.listings).toBe(1);
    expect(routes.asked).toEqual([]);
  }, 60_000);

  it('still looks up a host name added after the listing, and drops a removed one once routes changed', async () => {
    routes.set('late.svc.test', 'late', [upstream.target]);
    expect((await send(port, { host: 'late.svc.test' })).status).toBe(200);
    expect(routes.asked).toContain('late.svc.test');

    routes.routes.delete(hostOf(0));
    await cluster.routesChanged();
    for (let i = 0; i < 4; i++) expect((await send(port, { host: hostOf(0) })).status).toBe(404);
  }, 60_000);

  it('gives a worker that replaces a dead one the whole table before it serves', async () => {
    const [victim] = cluster.pids();
    if (victim === undefined) throw new Error('no worker');
    process.kill(victim, 'SIGKILL');
    await until(() => cluster.pids().length === 2 && !cluster.pids().includes(victim));
    const asked = routes.asked.length;
    await until(async () => {
      const results = await Promise.all(Array.from({ length: 6 }, () => send(port, { host: hostOf(HOSTS - 1) }).catch(() => null)));
      return results.every((r) => r?.status === 200);
    });
    for (const host of sample.slice(1)) for (let i = 0; i < 4; i++) expect((await send(port, { host })).status).toBe(200);

    expect(routes.asked.slice(asked)).toEqual([]);
  }, 60_000);
});
