import { RouteCache, type ResolvedRoute, type RouteEntry, type RouteTable } from '../src';

/** A route table over a map that counts its lookups. */
class MapTable implements RouteTable {
  readonly routes = new Map<string, ResolvedRoute>();
  lookups = 0;
  failure: Error | null = null;
  async resolve(host: string): Promise<ResolvedRoute | null> {
    this.lookups += 1;
    if (this.failure !== null) throw this.failure;
    return this.routes.get(host) ?? null;
  }
}

const route = (app: string, ...ports: number[]): ResolvedRoute => ({ app, targets: ports.map((port) => ({ host: '127.0.0.1', port })) });

describe('RouteCache', () => {
  it('looks a host name up once, shares concurrent lookups, and answers from memory after', async () => {
    const table = new MapTable();
    table.routes.set('a.test', route('a', 1));
    const cache = new RouteCache(table, { refreshMs: 0 });

    expect(cache.get('a.test')).toBeUndefined();
    const [first, second] = await Promise.all([cache.resolve('a.test'), cache.resolve('a.test')]);

    expect(first).toEqual(route('a', 1));
    expect(second).toEqual(route('a', 1));
    expect(cache.get('a.test')).toEqual(route('a', 1));
    expect(table.lookups).toBe(1);
  });

  it('remembers no failed lookup, and looks up again when asked for a fresh route', async () => {
    const table = new MapTable();
    table.failure = new Error('away');
    const cache = new RouteCache(table, { refreshMs: 0 });
    await expect(cache.resolve('a.test')).rejects.toThrow('away');
    expect(cache.get('a.test')).toBeUndefined();

    table.failure = null;
    table.routes.set('a.test', route('a', 1));
    await cache.resolve('a.test');
    table.routes.set('a.test', route('a', 2));

    expect(await cache.resolve('a.test')).toEqual(route('a', 1));
    expect(await cache.resolve('a.test', true)).toEqual(route('a', 2));
  });

  it('refreshes the known names, announces what changed and forgets names not used lately', async () => {
    const table = new MapTable();
    table.routes.set('a.test', route('a', 1));
    table.routes.set('b.test', route('b', 2));
    let now = 0;
    const cache = new RouteCache(table, { refreshMs: 0, forgetAfterMs: 1000, now: () => now });
    const heard: RouteEntry[][] = [];
    cache.onChange((changed) => heard.push(changed));
    await cache.resolve('a.test');
    await cache.resolve('b.test');
    heard.length = 0;

    table.routes.set('a.test', route('a', 1, 3));
    now = 600;
    cache.get('b.test');
    await cache.refresh();
    now = 1500;
    await cache.refresh();

    expect(heard).toEqual([[['a.test', route('a', 1, 3)]], [['a.test']]]);
    expect(cache.get('a.test')).toBeUndefined();
    expect(cache.get('b.test')).toEqual(route('b', 2));
  });

  it('announces a route whose HTTPS redirect changed, with the same processes', async () => {
    const table = new MapTable();
    table.routes.set('a.test', route('a', 1));
    const cache = new RouteCache(table, { refreshMs: 0 });
    const heard: RouteEntry[][] = [];
    cache.onChange((changed) => void heard.push(changed));
    await cache.resolve('a.test');
    heard.length = 0;

    table.routes.set('a.test', { ...route('a', 1), httpsRedirect: true });
    await cache.refresh();

    expect(heard).toEqual([[['a.test', { ...route('a', 1), httpsRedirect: true }]]]);
    expect(cache.get('a.test')?.httpsRedirect).toBe(true);
  });

  it('takes routes and forgotten names from its controller', () => {
    const cache = new RouteCache(new MapTable(), { refreshMs: 0 });

    cache.apply([['a.test', route('a', 1)], ['gone.test', null]]);
    cache.apply([['gone.test']]);

    expect(cache.snapshot()).toEqual([['a.test', route('a', 1)]]);
  });
});
