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

    expect(cache.snapshot()).toEqual({ listed: [], looked: [['a.test', route('a', 1)]] });
  });
});

/** A route table that can list every route, counting its listings and lookups. */
class ListingTable extends MapTable {
  listings = 0;
  listFailure: Error | null = null;
  async list(): Promise<Array<[string, ResolvedRoute]>> {
    this.listings += 1;
    if (this.listFailure !== null) throw this.listFailure;
    return [...this.routes];
  }
}

describe('RouteCache over a table that lists its routes', () => {
  const many = (count: number): Array<[string, ResolvedRoute]> => Array.from({ length: count }, (_, i) => [`app-${i}.test`, route(`app-${i}`, 1000 + i)]);

  it('knows every route after one refresh, with no lookup of any host name, and announces them as listed', async () => {
    const table = new ListingTable();
    for (const [host, r] of many(10_000)) table.routes.set(host, r);
    const cache = new RouteCache(table, { refreshMs: 0 });
    const heard: Array<[RouteEntry[], boolean]> = [];
    cache.onChange((changed, listed) => heard.push([changed, listed]));

    await cache.refresh();

    expect(table.listings).toBe(1);
    expect(cache.size()).toEqual({ listed: 10_000, looked: 0 });
    expect(cache.get('app-0.test')).toEqual(route('app-0', 1000));
    expect(await cache.resolve('app-9999.test')).toEqual(route('app-9999', 10_999));
    expect(table.lookups).toBe(0);
    expect(heard).toHaveLength(1);
    expect(heard[0]?.[1]).toBe(true);
    expect(heard[0]?.[0]).toHaveLength(10_000);
  });

  it('announces only what changed from one listing to the next: a changed route, a new one, one gone', async () => {
    const table = new ListingTable();
    table.routes.set('a.test', route('a', 1));
    table.routes.set('b.test', route('b', 2));
    table.routes.set('c.test', route('c', 3));
    const cache = new RouteCache(table, { refreshMs: 0 });
    await cache.refresh();
    const heard: Array<[RouteEntry[], boolean]> = [];
    cache.onChange((changed, listed) => heard.push([changed, listed]));

    table.routes.set('a.test', route('a', 1, 4));
    table.routes.delete('b.test');
    table.routes.set('d.test', route('d', 5));
    await cache.refresh();

    expect(heard).toEqual([
      [
        [
          ['a.test', route('a', 1, 4)],
          ['d.test', route('d', 5)],
          ['b.test'],
        ],
        true,
      ],
    ]);
    expect(cache.get('b.test')).toBeUndefined();
    expect(cache.get('c.test')).toEqual(route('c', 3));
  });

  it('still looks up a name the listing does not have yet, and takes it into the listing once listed', async () => {
    const table = new ListingTable();
    table.routes.set('a.test', route('a', 1));
    const cache = new RouteCache(table, { refreshMs: 0 });
    await cache.refresh();
    // Added after the listing: a cold lookup finds it.
    table.routes.set('new.test', route('new', 2));
    expect(cache.get('new.test')).toBeUndefined();
    expect(await cache.resolve('new.test')).toEqual(route('new', 2));
    expect(await cache.resolve('nobody.test')).toBeNull();
    expect(table.lookups).toBe(2);
    expect(cache.size()).toEqual({ listed: 1, looked: 2 });

    await cache.refresh();

    expect(cache.size()).toEqual({ listed: 2, looked: 1 });
    expect(cache.snapshot().listed).toContainEqual(['new.test', route('new', 2)]);
  });

  it('keeps listed routes however long unused and however many made-up names are asked for', async () => {
    const table = new ListingTable();
    for (const [host, r] of many(100)) table.routes.set(host, r);
    let now = 0;
    const cache = new RouteCache(table, { refreshMs: 0, forgetAfterMs: 1000, maxEntries: 50, now: () => now });
    await cache.refresh();

    for (let i = 0; i < 500; i++) await cache.resolve(`made-up-${i}.test`);
    now += 10_000;
    await cache.refresh();

    expect(cache.size()).toEqual({ listed: 100, looked: 0 });
    expect(cache.get('app-0.test')).toEqual(route('app-0', 1000));
  });

  it('takes the very same listing as unchanged, unless a lookup changed a listed route since', async () => {
    const listing: Array<[string, ResolvedRoute]> = [
      ['a.test', route('a', 1)],
      ['b.test', route('b', 2)],
    ];
    const table = { resolve: async (): Promise<ResolvedRoute | null> => null, list: async () => listing };
    const cache = new RouteCache(table, { refreshMs: 0 });
    await cache.refresh();
    const heard: Array<[RouteEntry[], boolean]> = [];
    cache.onChange((changed, listed) => heard.push([changed, listed]));

    await cache.refresh();
    expect(heard).toEqual([]);
    // Every process of a.test gone, and the table knows no app there any more: it leaves the listing...
    expect(await cache.resolve('a.test', true)).toBeNull();
    expect(cache.get('a.test')).toBeNull();
    // ...until the table, still listing it, is read again in whole.
    await cache.refresh();
    expect(cache.get('a.test')).toEqual(route('a', 1));
    expect(cache.size()).toEqual({ listed: 2, looked: 0 });
  });

  it('keeps what it knew when a listing fails', async () => {
    const table = new ListingTable();
    table.routes.set('a.test', route('a', 1));
    const cache = new RouteCache(table, { refreshMs: 0 });
    await cache.refresh();
    table.listFailure = new Error('database away');
    table.routes.delete('a.test');

    await cache.refresh();

    expect(cache.get('a.test')).toEqual(route('a', 1));
  });

  it('as a worker\'s copy: takes listed routes and their removal, and a flood of looked-up names does not push them out', () => {
    const copy = new RouteCache({ resolve: async () => null }, { refreshMs: 0, maxEntries: 10 });
    copy.apply(many(100), true);
    for (let i = 0; i < 50; i++) copy.apply([[`made-up-${i}.test`, null]]);
    copy.apply([['app-1.test']], true);

    expect(copy.size()).toEqual({ listed: 99, looked: 10 });
    expect(copy.get('app-0.test')).toEqual(route('app-0', 1000));
    expect(copy.get('app-1.test')).toBeUndefined();
  });

  it('a listed route looked up afresh (every process gone) stays listed; one no longer routed leaves the listing', async () => {
    const table = new ListingTable();
    table.routes.set('a.test', route('a', 1));
    table.routes.set('b.test', route('b', 2));
    const cache = new RouteCache(table, { refreshMs: 0 });
    await cache.refresh();
    const heard: Array<[RouteEntry[], boolean]> = [];
    cache.onChange((changed, listed) => heard.push([changed, listed]));
    table.routes.set('a.test', route('a', 3));
    table.routes.delete('b.test');

    expect(await cache.resolve('a.test', true)).toEqual(route('a', 3));
    expect(await cache.resolve('b.test', true)).toBeNull();

    expect(cache.snapshot()).toEqual({ listed: [['a.test', route('a', 3)]], looked: [['b.test', null]] });
    expect(heard).toEqual([
      [[['a.test', route('a', 3)]], true],
      [[['b.test']], true],
      [[['b.test', null]], false],
    ]);
  });
});
