import { request } from 'node:http';
import { connect, type PeerCertificate } from 'node:tls';
import { describeEachBackend, signUp, startTestServer, type Session, type TestServer } from './support';
import { rsaPair } from './support/certs';

/** Sends a request to the router with the given Host header. */
function viaRouter(port: number, host: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { Host: host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? '', body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The certificate the router presents for a server name. */
function handshake(port: number, servername: string): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const certificate = socket.getPeerCertificate();
      socket.end();
      resolve(certificate);
    });
    socket.once('error', reject);
  });
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describeEachBackend('the router of a running server', (backend) => {
  let server: TestServer;
  let alice: Session;
  let routerPort: number;

  beforeAll(async () => {
    server = await startTestServer(await backend.newStore(), { PLATFORM_DOMAIN: 'apps.test', ROUTER_TLS_PORT: '0', ROUTER_WORKERS: '2' });
    routerPort = server.routerPort ?? 0;
    alice = await signUp(server.api, 'alice');
    expect((await alice.api.post('/v1/apps/', { id: 'myapp' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('listens on its own ports, apart from the API', () => {
    expect(server.routerPort).toEqual(expect.any(Number));
    expect(server.routerTlsPort).toEqual(expect.any(Number));
    expect(server.routerPort).not.toBe(new URL(server.url).port);
  });

  it('answers 503 for <app>.<platform domain> when no web process runs (the memory scheduler runs none)', async () => {
    const res = await viaRouter(routerPort, 'MyApp.apps.test:80');

    expect(res).toEqual({ status: 503, contentType: 'text/plain; charset=utf-8', body: 'No web process of myapp is running.\n' });
  });

  it('answers 404 for host names of no app: unknown apps, the platform domain itself, names two levels under it, unknown domains', async () => {
    for (const host of ['nope.apps.test', 'apps.test', 'a.myapp.apps.test', 'www.unknown.example']) {
      expect((await viaRouter(routerPort, host)).status).toBe(404);
    }
  });

  it('routes an app\'s custom domain to it, and stops once the domain is removed', async () => {
    expect((await alice.api.post('/v1/apps/myapp/domains/', { domain: 'www.myapp.example' })).status).toBe(201);

    const added = await viaRouter(routerPort, 'www.myapp.example');
    expect((await alice.api.delete('/v1/apps/myapp/domains/www.myapp.example')).status).toBe(204);
    // The router remembers the app of a host name for a second.
    await pause(1100);
    const removed = await viaRouter(routerPort, 'www.myapp.example');

    expect(added.status).toBe(503);
    expect(added.body).toBe('No web process of myapp is running.\n');
    expect(removed.status).toBe(404);
  });

  it('serves HTTPS with the certificate uploaded for the server name, and with a wildcard certificate one level up', async () => {
    expect((await alice.api.post('/v1/apps/myapp/domains/', { domain: 'www.shop.example' })).status).toBe(201);
    const exact = rsaPair({ commonName: 'www.shop.example', dnsNames: ['www.shop.example'] });
    // A wildcard under the app's own platform host (alice, the first user, may also upload *.apps.test).
    const wildcard = rsaPair({ commonName: '*.myapp.apps.test', dnsNames: ['*.myapp.apps.test'] });
    expect((await alice.api.post('/v1/certs/', exact)).status).toBe(201);
    expect((await alice.api.post('/v1/certs/', wildcard)).status).toBe(201);
    const tlsPort = server.routerTlsPort ?? 0;

    const forExact = await handshake(tlsPort, 'www.shop.example');
    const forWildcard = await handshake(tlsPort, 'api.myapp.apps.test');

    expect(forExact.subject.CN).toBe('www.shop.example');
    expect(forWildcard.subject.CN).toBe('*.myapp.apps.test');
    await expect(handshake(tlsPort, 'www.other.example')).rejects.toThrow();
  });
});
