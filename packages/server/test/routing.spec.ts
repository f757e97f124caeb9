import { CertificateForServerName, DEFAULT_SETTINGS, IssuedCertificateFor, type TlsName } from '@svc/core';
import { FakeSecretBox, InMemoryTlsStore, InMemoryUnitOfWork, aCertificate, aDomain, aUser, anApp } from '@svc/core/testing';
import { PlatformRouteTable, StoredCertificates, type EndpointSource } from '../src/routing';

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
