import { CertificateForServerName, DEFAULT_SETTINGS, IssuedCertificateFor, type TlsName } from '@svc/core';
import { FakeScheduler, FakeSecretBox, InMemoryTlsStore, InMemoryUnitOfWork, aCertificate, aDomain, aUser, anApp } from '@svc/core/testing';
import { DrainingScheduler, LeavingContainers, PlatformRouteTable, ROUTE_LIST_PAGE, StoredCertificates, type EndpointSource } from '../src/routing';
import { keepsHostNames } from '../src/server';

/** A scheduler stand-in: the web (and cmd) endpoints of each app, and who asked. */
class FakeEndpoints implements EndpointSource {
  readonly byApp = new Map<string, Array<{ host: string; port: number }>>();
  readonly cmdByApp = new Map<string, Array<{ host: string; port: number }>>();
  readonly asked: string[] = [];

  endpoints(app: string, type: string): Array<{ host: string; port: number }> {
    this.asked.push(`${app}/${type}`);
    return (type === 'cmd' ? this.cmdByApp : this.byApp).get(app) ?? [];
  }
}

async function store(): Promise<InMemoryUnitOfWork> {
  const uow = new InMemoryUnitOfWork();
  const { id: _id, ...alice } = aUser({ username: 'alice' });
  await uow.repositories.users.create(alice);
  await uow.repositories.apps.create(anApp({ id: 'myapp' }));
  await uow.repositories.apps.create(anApp({ id: 'other' }));
  await uow.repositories.domains.create(aDomain({ app: 'other', domain: 'www.other.example' }));
  return uow;
}

describe('PlatformRouteTable', () => {
  it('routes <app>.<platform domain> to the app, whatever the case, port or trailing dot, with its web endpoints', async () => {
    const processes = new FakeEndpoints();
    processes.byApp.set('myapp', [{ host: '127.0.0.1', port: 20001 }, { host: '127.0.0.1', port: 20002 }]);
    const table = new PlatformRouteTable(await store(), 'Apps.Test', processes);

    expect(await table.resolve('MyApp.apps.test.:8080')).toEqual({
      app: 'myapp',
      targets: [{ host: '127.0.0.1', port: 20001 }, { host: '127.0.0.1', port: 20002 }],
    });
    expect(processes.asked).toEqual(['myapp/web']);
  });

  it("routes to the app's cmd containers (an image's own command) when it has no web container", async () => {
    const processes = new FakeEndpoints();
    processes.cmdByApp.set('myapp', [{ host: '10.1.0.2', port: 5000 }]);
    const table = new PlatformRouteTable(await store(), 'apps.test', processes);

    expect(await table.resolve('myapp.apps.test')).toEqual({ app: 'myapp', targets: [{ host: '10.1.0.2', port: 5000 }] });
    expect(processes.asked).toEqual(['myapp/web', 'myapp/cmd']);
  });

  it('routes a custom domain to the app that added it', async () => {
    const table = new PlatformRouteTable(await store(), 'apps.test', new FakeEndpoints());

    expect(await table.resolve('WWW.other.example')).toEqual({ app: 'other', targets: [] });
  });

  it.each([['nope.apps.test'], ['apps.test'], ['a.myapp.apps.test'], ['www.unknown.example'], ['[::1]:8080'], ['']])('knows no app at %p', async (host) => {
    const table = new PlatformRouteTable(await store(), 'apps.test', new FakeEndpoints());

    expect(await table.resolve(host)).toBeNull();
  });

  it('has no targets without a scheduler that runs processes', async () => {
    const table = new PlatformRouteTable(await store(), 'apps.test', null);

    expect(await table.resolve('myapp.apps.test')).toEqual({ app: 'myapp', targets: [] });
  });

  it('remembers the app of a host name for the cache time, but asks for the endpoints every time', async () => {
    const uow = await store();
    const processes = new FakeEndpoints();
    let now = 0;
    const table = new PlatformRouteTable(uow, 'apps.test', processes, { cacheMs: 1000, now: () => now });
    expect((await table.resolve('www.other.example'))?.app).toBe('other');

    await uow.repositories.domains.delete('www.other.example');
    processes.byApp.set('other', [{ host: '127.0.0.1', port: 20003 }]);
    now = 999;
    const cached = await table.resolve('www.other.example');
    now = 1000;
    const expired = await table.resolve('www.other.example');

    expect(cached).toEqual({ app: 'other', targets: [{ host: '127.0.0.1', port: 20003 }] });
    expect(expired).toBeNull();
  });
});

describe('PlatformRouteTable.list', () => {
  /** Apps `app-<i>` with a domain `www.app-<i>.example` each, and a count of the reads. */
  async function manyApps(count: number): Promise<{ uow: InMemoryUnitOfWork; reads: Record<string, number> }> {
    const uow = await store();
    for (let i = 0; i < count; i++) {
      await uow.repositories.apps.create(anApp({ id: `app-${i}` }));
      await uow.repositories.domains.create(aDomain({ app: `app-${i}`, domain: `www.app-${i}.example` }));
    }
    const reads: Record<string, number> = {};
    const repos = uow.repositories;
    for (const [repo, method] of [['apps', 'idsAfter'], ['apps', 'findById'], ['domains', 'listAfter'], ['domains', 'find']] as const) {
      const target = repos[repo] as unknown as Record<string, (...args: unknown[]) => unknown>;
      const original = target[method]!.bind(target);
      target[method] = (...args: unknown[]) => {
        reads[`${repo}.${method}`] = (reads[`${repo}.${method}`] ?? 0) + 1;
        return original(...args);
      };
    }
    return { uow, reads };
  }

  it('lists every app under the platform domain and every domain, with their web endpoints, in pages of reads, not a read per app', async () => {
    const count = ROUTE_LIST_PAGE * 2 + 10;
    const { uow, reads } = await manyApps(count);
    const processes = new FakeEndpoints();
    processes.byApp.set('app-7', [{ host: '127.0.0.1', port: 20007 }]);
    const table = new PlatformRouteTable(uow, 'Apps.Test', processes);

    const listed = new Map(await table.list());

    // myapp and other, the apps, and a domain of each plus other's own.
    expect(listed.size).toBe((count + 2) * 2 - 1);
    expect(listed.get('app-7.apps.test')).toEqual({ app: 'app-7', targets: [{ host: '127.0.0.1', port: 20007 }] });
    expect(listed.get('www.app-7.example')).toEqual({ app: 'app-7', targets: [{ host: '127.0.0.1', port: 20007 }] });
    expect(listed.get('www.other.example')).toEqual({ app: 'other', targets: [] });
    expect(reads).toEqual({ 'apps.idsAfter': 3, 'domains.listAfter': 3 });
    // One endpoints question per app (and its cmd fallback), however many names it has.
    expect(processes.asked.filter((asked) => asked === 'app-7/web')).toHaveLength(1);
    // The same answer resolve gives, name by name.
    for (const host of ['app-7.apps.test', 'www.app-7.example', 'myapp.apps.test', 'www.other.example']) expect(await table.resolve(host)).toEqual(listed.get(host));
  });

  it('reads the names again after the listing\'s cache time or forget(), not after a change of processes only, and asks for the endpoints every time', async () => {
    const { uow, reads } = await manyApps(3);
    const processes = new FakeEndpoints();
    let now = 0;
    const table = new PlatformRouteTable(uow, 'apps.test', processes, { listCacheMs: 1000, now: () => now });
    await table.list();
    await uow.repositories.domains.delete('www.app-1.example');
    processes.byApp.set('app-1', [{ host: '127.0.0.1', port: 20001 }]);

    const cached = new Map(await table.list());
    expect(cached.get('www.app-1.example')).toEqual({ app: 'app-1', targets: [{ host: '127.0.0.1', port: 20001 }] });
    expect(reads['domains.listAfter']).toBe(1);
    // A config change or a deploy: the names stay, the processes are asked again.
    table.forget(true);
    processes.byApp.set('app-1', [{ host: '127.0.0.1', port: 20011 }]);
    expect(new Map(await table.list()).get('www.app-1.example')).toEqual({ app: 'app-1', targets: [{ host: '127.0.0.1', port: 20011 }] });
    expect(reads['domains.listAfter']).toBe(1);
    table.forget();
    expect(new Map(await table.list()).has('www.app-1.example')).toBe(false);
    now = 1000;
    await table.list();
    expect(reads['domains.listAfter']).toBe(3);
  });

  it('after API writes that changed no name, asks only their apps for processes; the next listing asks every app again', async () => {
    const { uow } = await manyApps(3);
    const processes = new FakeEndpoints();
    const table = new PlatformRouteTable(uow, 'apps.test', processes);
    const first = await table.list();
    processes.asked.length = 0;

    // A config change of app-1 (nothing changes) and one of app-2 whose process moved; app-0 changed unannounced.
    processes.byApp.set('app-2', [{ host: '127.0.0.1', port: 20002 }]);
    processes.byApp.set('app-0', [{ host: '127.0.0.1', port: 20000 }]);
    table.forget(true, ['app-1']);
    expect(await table.list()).toBe(first);
    expect(processes.asked.filter((asked) => asked.endsWith('/web'))).toEqual(['app-1/web']);

    table.forget(true, ['app-2']);
    const partial = new Map(await table.list());
    expect(partial.get('www.app-2.example')).toEqual({ app: 'app-2', targets: [{ host: '127.0.0.1', port: 20002 }] });
    expect(partial.get('www.app-0.example')).toEqual({ app: 'app-0', targets: [] });

    // The periodic listing asks every app: the unannounced change shows.
    expect(new Map(await table.list()).get('www.app-0.example')).toEqual({ app: 'app-0', targets: [{ host: '127.0.0.1', port: 20000 }] });
  });

  it('gives the very same listing again while nothing changed, and a new one once an app\'s processes change', async () => {
    const { uow, reads } = await manyApps(3);
    const processes = new FakeEndpoints();
    const table = new PlatformRouteTable(uow, 'apps.test', processes);
    const first = await table.list();

    expect(await table.list()).toBe(first);
    processes.byApp.set('app-2', [{ host: '127.0.0.1', port: 20002 }]);
    const second = await table.list();
    expect(second).not.toBe(first);
    expect(new Map(second).get('www.app-2.example')).toEqual({ app: 'app-2', targets: [{ host: '127.0.0.1', port: 20002 }] });
    expect(await table.list()).toBe(second);
    expect(reads['domains.listAfter']).toBe(1);
  });

  it('marks the names that redirect to HTTPS, asking only about the apps that redirect at all', async () => {
    const { uow } = await manyApps(3);
    const asked: string[] = [];
    const table = new PlatformRouteTable(uow, 'apps.test', new FakeEndpoints(), {
      redirects: { execute: async (app, host) => (asked.push(host), host === 'www.app-1.example') },
      redirectingApps: async () => ['app-1'],
    });

    const listed = new Map(await table.list());

    expect(listed.get('www.app-1.example')).toEqual({ app: 'app-1', httpsRedirect: true, targets: [] });
    expect(listed.get('app-1.apps.test')).toEqual({ app: 'app-1', targets: [] });
    expect(listed.get('www.app-2.example')).toEqual({ app: 'app-2', targets: [] });
    expect(asked.sort()).toEqual(['app-1.apps.test', 'www.app-1.example']);
  });

  it('leaves out the containers being stopped', async () => {
    const leaving = new LeavingContainers();
    const processes = {
      endpoints: () => [
        { host: '10.0.0.2', port: 5000, id: 'c1' },
        { host: '10.0.0.3', port: 5000, id: 'c2' },
      ],
    };
    const table = new PlatformRouteTable(await store(), 'apps.test', processes, {}, leaving);
    leaving.ids.add('c1');

    expect(new Map(await table.list()).get('myapp.apps.test')).toEqual({ app: 'myapp', targets: [{ host: '10.0.0.3', port: 5000 }] });
  });
});

describe('DrainingScheduler', () => {
  it('says it takes as many concurrent starts as the scheduler it wraps, and none when that one does not say', () => {
    const engine = new FakeScheduler();
    engine.concurrentStarts = 16;

    expect(new DrainingScheduler(engine, new LeavingContainers()).concurrentStarts).toBe(16);
    expect(new DrainingScheduler(new FakeScheduler(), new LeavingContainers()).concurrentStarts).toBeUndefined();
  });

  it("answers a rollback's check of a build with the wrapped scheduler's reason, and has no check when that one has none", async () => {
    const engine = new FakeScheduler();
    engine.refuseToRun((build) => build.workdir !== null, 'its build was made for the process scheduler');
    const draining = new DrainingScheduler(engine, new LeavingContainers());
    const build = { app: 'myapp', release: 4, image: 'myapp:git-abc1234', workdir: '/srv/builds/abc', procfile: { web: 'serve' } };

    await expect(draining.checkRunnable?.(build)).resolves.toBe('its build was made for the process scheduler');
    await expect(draining.checkRunnable?.({ ...build, workdir: null })).resolves.toBeNull();
    expect(engine.checked.map((b) => b.workdir)).toEqual(['/srv/builds/abc', null]);
    const bare = { start: engine.start, stop: engine.stop, run: engine.run, states: engine.states };
    expect(new DrainingScheduler(bare, new LeavingContainers()).checkRunnable).toBeUndefined();
  });
});

describe('StoredCertificates', () => {
  async function withBob(): Promise<InMemoryUnitOfWork> {
    const uow = await store();
    const { id: _id, ...bob } = aUser({ username: 'bob' });
    await uow.repositories.users.create(bob);
    await uow.repositories.apps.create(anApp({ id: 'bobsapp', owner: 'bob' }));
    await uow.repositories.domains.create(aDomain({ app: 'myapp', domain: 'www.example.com' }));
    await uow.repositories.domains.create(aDomain({ app: 'bobsapp', domain: 'shop.bob.example', owner: 'bob' }));
    return uow;
  }

  function storedCertificates(uow: InMemoryUnitOfWork, secrets: FakeSecretBox): StoredCertificates {
    return new StoredCertificates(new CertificateForServerName({ uow, settings: { ...DEFAULT_SETTINGS, platformDomain: 'apps.test' } }), secrets);
  }

  it('finds a certificate by exact common name, in lower case, with its key unsealed', async () => {
    const uow = await withBob();
    const secrets = new FakeSecretBox();
    const { id: _id, ...certificate } = aCertificate({ commonName: 'www.example.com', certificate: 'PEM CERT', sealedKey: secrets.seal('PEM KEY'), owner: 'alice' });
    await uow.repositories.certificates.create(certificate);
    const certificates = storedCertificates(uow, secrets);

    expect(await certificates.find('WWW.Example.com')).toEqual({ certificate: 'PEM CERT', key: 'PEM KEY' });
    expect(await certificates.find('example.com')).toBeNull();
  });

  it("never serves a tenant's certificate for a name that is now another tenant's", async () => {
    const uow = await withBob();
    const secrets = new FakeSecretBox();
    // Stored while alice had the domain (or before uploads were checked); bob has it now.
    const { id: _id, ...certificate } = aCertificate({ commonName: 'shop.bob.example', sealedKey: secrets.seal('KEY'), owner: 'alice' });
    await uow.repositories.certificates.create(certificate);

    expect(await storedCertificates(uow, secrets).find('shop.bob.example')).toBeNull();
  });

  it("serves a tenant's wildcard under its app's platform host, and stops once the app is transferred", async () => {
    const uow = await withBob();
    const secrets = new FakeSecretBox();
    const { id: _id, ...certificate } = aCertificate({ commonName: '*.myapp.apps.test', certificate: 'PEM', sealedKey: secrets.seal('KEY'), owner: 'alice' });
    await uow.repositories.certificates.create(certificate);
    const certificates = storedCertificates(uow, secrets);
    expect(await certificates.find('*.myapp.apps.test')).toEqual({ certificate: 'PEM', key: 'KEY' });

    const app = (await uow.repositories.apps.findById('myapp'))!;
    await uow.repositories.apps.update({ ...app, owner: 'bob' });
    expect(await certificates.find('*.myapp.apps.test')).toBeNull();
  });

  it("serves the platform wildcard only while its owner is an administrator", async () => {
    const uow = await withBob();
    const secrets = new FakeSecretBox();
    const { id: _id, ...certificate } = aCertificate({ commonName: '*.apps.test', certificate: 'PEM', sealedKey: secrets.seal('KEY'), owner: 'bob' });
    await uow.repositories.certificates.create(certificate);
    const certificates = storedCertificates(uow, secrets);
    expect(await certificates.find('*.apps.test')).toBeNull();

    const bob = (await uow.repositories.users.findByUsername('bob'))!;
    await uow.repositories.users.update({ ...bob, isSuperuser: true, isStaff: true });
    expect(await certificates.find('*.apps.test')).toEqual({ certificate: 'PEM', key: 'KEY' });
  });
});

describe('StoredCertificates with certificates issued over ACME', () => {
  const settings = { ...DEFAULT_SETTINGS, platformDomain: 'apps.test' };
  const issued = (name: string, app: string, secrets: FakeSecretBox): TlsName => ({
    name, app, state: 'issued', certificate: `ACME ${name}`, sealedKey: secrets.seal(`ACME KEY ${name}`), expires: new Date(), reason: null, failures: 0, nextAttempt: new Date(), updated: new Date(),
  });

  async function setUp(): Promise<{ uow: InMemoryUnitOfWork; tls: InMemoryTlsStore; secrets: FakeSecretBox; certificates: StoredCertificates }> {
    const uow = await store();
    const { id: _id, ...admin } = aUser({ username: 'root', isSuperuser: true });
    await uow.repositories.users.create(admin);
    await uow.repositories.domains.create(aDomain({ app: 'myapp', domain: 'www.example.com' }));
    const tls = new InMemoryTlsStore();
    const secrets = new FakeSecretBox();
    for (const [name, app] of [['www.example.com', 'myapp'], ['myapp.apps.test', 'myapp'], ['gone.example.com', 'myapp']] as const) await tls.insert(issued(name, app, secrets));
    const certificates = new StoredCertificates(new CertificateForServerName({ uow, settings }), secrets, new IssuedCertificateFor({ uow, settings, tls }));
    return { uow, tls, secrets, certificates };
  }

  it('serves the issued certificate, unsealed, while its name belongs to its app', async () => {
    const { certificates } = await setUp();
    expect(await certificates.find('www.example.com')).toEqual({ certificate: 'ACME www.example.com', key: 'ACME KEY www.example.com' });
    expect(await certificates.find('myapp.apps.test')).toEqual({ certificate: 'ACME myapp.apps.test', key: 'ACME KEY myapp.apps.test' });
    expect(await certificates.find('gone.example.com')).toBeNull();
  });

  it('serves an uploaded certificate instead, exactly or by the platform wildcard', async () => {
    const { uow, secrets, certificates } = await setUp();
    const { id: _a, ...exact } = aCertificate({ commonName: 'www.example.com', certificate: 'UPLOADED', sealedKey: secrets.seal('UPLOADED KEY'), owner: 'alice' });
    await uow.repositories.certificates.create(exact);
    const { id: _b, ...wildcard } = aCertificate({ commonName: '*.apps.test', certificate: 'WILDCARD', sealedKey: secrets.seal('WILDCARD KEY'), owner: 'root' });
    await uow.repositories.certificates.create(wildcard);

    expect(await certificates.find('www.example.com')).toEqual({ certificate: 'UPLOADED', key: 'UPLOADED KEY' });
    // The exact name answers none, so the router asks for the wildcard next.
    expect(await certificates.find('myapp.apps.test')).toBeNull();
    expect(await certificates.find('*.apps.test')).toEqual({ certificate: 'WILDCARD', key: 'WILDCARD KEY' });
  });
});

describe('keepsHostNames: which API writes leave every host name with its app', () => {
  it('keeps them for config, builds, releases, processes, collaborators and webhooks of an app', () => {
    for (const path of ['/v1/apps/web/config/', '/v1/apps/web/builds/', '/v1/apps/web/releases/rollback/', '/v1/apps/web/containers/web', '/v1/apps/web/perms/bob', '/v1/apps/web/webhooks/', '/v1/apps/web/config?x=1']) {
      expect([path, keepsHostNames(path)]).toEqual([path, true]);
    }
  });

  it('does not for an app created, changed or deleted, its domains, certificates, or a path it does not know', () => {
    for (const path of ['/v1/apps/', '/v1/apps', '/v1/apps/web/', '/v1/apps/web/domains/', '/v1/apps/web/domains/www.example.org', '/v1/apps/web/certs/', '/v1/apps/web/acm/', '/v1/apps/web/transfer/', '/v1/apps/config/', '/v1/apps/web/configs']) {
      expect([path, keepsHostNames(path)]).toEqual([path, false]);
    }
  });
});
