import { request } from 'node:https';
import { connect, type PeerCertificate } from 'node:tls';
import { AppRouter, SecureContextCache, type CertificateStore, type ServedCertificate } from '../src';
import { FakeRouteTable, pause, selfSigned, startUpstream, type Upstream } from './support';

/** A certificate store over a map, recording every name asked for. */
class MapCertificateStore implements CertificateStore {
  readonly certificates = new Map<string, ServedCertificate>();
  readonly asked: string[] = [];
  failure: Error | null = null;

  async find(serverName: string): Promise<ServedCertificate | null> {
    this.asked.push(serverName);
    if (this.failure !== null) throw this.failure;
    return this.certificates.get(serverName) ?? null;
  }
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

// RSA key generation takes a moment: one set of certificates for the whole file.
const WWW = selfSigned('www.example.com');
const WWW_RENEWED = selfSigned('www.example.com', ['www.example.com', 'renewed.example.com']);
const WILDCARD = selfSigned('*.example.org');

/** The certificate the router presents for a server name (none: no server name is sent). */
function handshake(port: number, servername?: string): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(servername === undefined ? {} : { servername }) }, () => {
      const certificate = socket.getPeerCertificate();
      socket.end();
      resolve(certificate);
    });
    socket.once('error', reject);
  });
}

describe('AppRouter over HTTPS', () => {
  let routes: FakeRouteTable;
  let store: MapCertificateStore;
  let router: AppRouter;
  let port: number;
  let app: Upstream;

  beforeEach(async () => {
    routes = new FakeRouteTable();
    store = new MapCertificateStore();
    store.certificates.set('www.example.com', WWW);
    store.certificates.set('*.example.org', WILDCARD);
    app = await startUpstream('web');
    routes.set('www.example.com', 'myapp', [app.target]);
    router = new AppRouter({ routes, certificates: store, logger: silent, certificateCache: { ttlMs: 200, missTtlMs: 200 } });
    ({ port } = await router.listen(0, '127.0.0.1').then(() => router.listenTls(0, '127.0.0.1')));
  });

  afterEach(async () => {
    await router.close(1000);
    app.server.closeAllConnections();
    await app.close();
  });

  it('presents the certificate stored under the exact server name', async () => {
    const certificate = await handshake(port, 'www.example.com');

    expect(certificate.subject.CN).toBe('www.example.com');
    expect(store.asked).toEqual(['www.example.com']);
  });

  it('falls back to the wildcard certificate one level up', async () => {
    const certificate = await handshake(port, 'API.example.org');

    expect(certificate.subject.CN).toBe('*.example.org');
    expect(store.asked).toEqual(['api.example.org', '*.example.org']);
  });

  it('fails the handshake for a name no certificate covers, a name two levels below a wildcard, and no server name', async () => {
    await expect(handshake(port, 'www.example.net')).rejects.toThrow();
    await expect(handshake(port, 'a.b.example.org')).rejects.toThrow();
    await expect(handshake(port)).rejects.toThrow();
    expect(store.asked).toEqual(['www.example.net', '*.example.net', 'a.b.example.org', '*.b.example.org']);
  });

  it('fails the handshake when the store fails, and serves again once it answers', async () => {
    store.failure = new Error('database away');
    await expect(handshake(port, 'www.example.com')).rejects.toThrow();

    store.failure = null;

    expect((await handshake(port, 'www.example.com')).subject.CN).toBe('www.example.com');
  });

  it('routes HTTPS requests to the app with X-Forwarded-Proto https', async () => {
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, servername: 'www.example.com', headers: { Host: 'www.example.com' }, ca: WWW.certificate, agent: false },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString('utf8');
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });

    const seen = JSON.parse(answer.body) as { headers: Record<string, string> };
    expect(answer.status).toBe(200);
    expect(seen.headers['x-forwarded-proto']).toBe('https');
    expect(seen.headers['x-forwarded-port']).toBe(String(port));
  });

  it('looks a name up once while its context is cached, and again after the cache time, seeing a replaced certificate', async () => {
    await handshake(port, 'www.example.com');
    await handshake(port, 'www.example.com');
    expect(store.asked).toEqual(['www.example.com']);

    store.certificates.set('www.example.com', WWW_RENEWED);
    await pause(250);
    const renewed = await handshake(port, 'www.example.com');

    expect(store.asked).toEqual(['www.example.com', 'www.example.com']);
    expect(renewed.subjectaltname).toBe('DNS:www.example.com, DNS:renewed.example.com');
  });

  it('sees a certificate uploaded after a miss once the miss has expired, or at once after invalidation', async () => {
    await expect(handshake(port, 'shop.example.com')).rejects.toThrow();
    store.certificates.set('shop.example.com', selfSigned('shop.example.com'));

    router.invalidateCertificate('shop.example.com');

    expect((await handshake(port, 'shop.example.com')).subject.CN).toBe('shop.example.com');
  });

  it('refuses to serve HTTPS without a certificate store', () => {
    const plain = new AppRouter({ routes });

    expect(() => plain.listenTls(0, '127.0.0.1')).toThrow(/certificate store/);
  });
});

describe('SecureContextCache', () => {
  it('shares one lookup between concurrent handshakes, forgets the oldest names beyond its size, and ignores a stored pair it cannot use', async () => {
    const store = new MapCertificateStore();
    store.certificates.set('a.example.com', WWW);
    store.certificates.set('b.example.com', WWW);
    store.certificates.set('broken.example.com', { certificate: 'not a certificate', key: 'not a key' });
    const errors: string[] = [];
    const cache = new SecureContextCache(store, { ...silent, error: (_obj, msg) => errors.push(msg) }, { maxEntries: 1 });

    const [first, second] = await Promise.all([cache.contextFor('a.example.com'), cache.contextFor('A.example.com.')]);
    await cache.contextFor('b.example.com');
    await cache.contextFor('a.example.com');
    const broken = await cache.contextFor('broken.example.com');

    expect(first).not.toBeNull();
    expect(second).toBe(first);
    expect(store.asked).toEqual(['a.example.com', 'b.example.com', 'a.example.com', 'broken.example.com']);
    expect(broken).toBeNull();
    expect(errors).toEqual(['stored certificate cannot be used']);
  });
});
