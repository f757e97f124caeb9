import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type PeerCertificate } from 'node:tls';
import { describeWithSandbox } from '../../scheduler-process/test/support/sandbox';
import { startDnsResponder, type DnsResponder } from '../../certs-acme/test/support/dns';
import { describeWithPebble, freePort, startPebble, type Pebble } from '../../certs-acme/test/support/pebble';
import { inlineNode, signUp, startTestServer, type Session, type TestServer } from './support';
import type { Store } from './support/backend';
import { rsaPair } from './support/certs';

jest.setTimeout(180_000);

/*
 * Automatic HTTPS against Debian's pebble, as an app owner sees it: names resolve through a
 * DNS responder of the test (the test names to 127.0.0.1, anything else NXDOMAIN), pebble
 * validates HTTP-01 on the router's HTTP port, and HTTPS is checked with a client that
 * trusts pebble's root only.
 */

const APP_JS = `
const http = require('http');
http.createServer((req, res) => res.end('hello from ' + req.headers.host + ' over ' + req.headers['x-forwarded-proto'])).listen(Number(process.env.PORT));
`;

interface NameState {
  name: string;
  state: string;
  source: string | null;
  expires: string | null;
  reason: string | null;
  next_attempt: string | null;
}

/** An HTTPS GET through the router on 127.0.0.1, verified against `ca` only. */
function httpsGet(port: number, name: string, ca: string): Promise<{ status: number; text: string; certificate: PeerCertificate }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, servername: name, headers: { Host: name }, ca, agent: false, timeout: 10_000 }, (res) => {
      const certificate = (res.socket as import('node:tls').TLSSocket).getPeerCertificate();
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, certificate }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** A plain HTTP GET through the router. */
function httpGet(port: number, host: string, path = '/'): Promise<{ status: number; location: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { Host: host }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The certificate the router presents for a name, without verifying it. */
function presented(port: number, servername: string): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const certificate = socket.getPeerCertificate();
      socket.end();
      resolve(certificate);
    });
    socket.once('error', reject);
  });
}

async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}; last seen: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    last = await read();
  }
  return last;
}

describeWithPebble('automatic HTTPS against pebble', () => {
  describeWithSandbox('automatic HTTPS of a running controller', () => {
    let dns: DnsResponder;
    let pebble: Pebble;
    let root: string;
    let dataDir: string;
    let store: Store;
    let server: TestServer;
    let alice: Session;
    let mallory: Session;
    let routerPort: number;
    let tlsPort: number;
    let env: Record<string, string>;

    const tlsOf = async (session: Session, app: string): Promise<{ status: number; body: { https_redirect: boolean; automatic: boolean; names: NameState[] } }> => {
      const res = await session.api.get(`/v1/apps/${app}/tls/`);
      return { status: res.status, body: res.body as unknown as { https_redirect: boolean; automatic: boolean; names: NameState[] } };
    };
    const stateOf = async (session: Session, app: string, name: string): Promise<NameState | undefined> => (await tlsOf(session, app)).body.names.find((n) => n.name === name);

    beforeAll(async () => {
      dns = await startDnsResponder({ 'www.shop.test': '127.0.0.1', 'shop.apps.test': '127.0.0.1', 'mine.apps.test': '127.0.0.1' });
      routerPort = await freePort();
      tlsPort = await freePort();
      pebble = await startPebble({ httpPort: routerPort, dnsServer: dns.address });
      root = await pebble.issuingRoot();
      dataDir = await mkdtemp(join(tmpdir(), 'svc-acme-e2e-'));
      await writeFile(join(dataDir, 'pebble-api-ca.pem'), pebble.apiCa);
      store = { dataDir: join(dataDir, 'store') };
      env = {
        SCHEDULER: 'process',
        HEALTHCHECK_TIMEOUT: '30',
        PROCESS_STOP_TIMEOUT_SECONDS: '2',
        PLATFORM_DOMAIN: 'apps.test',
        ROUTER_PORT: String(routerPort),
        ROUTER_TLS_PORT: String(tlsPort),
        // A worker process: challenges are answered over its channel to the controller.
        ROUTER_WORKERS: '1',
        ACME_DIRECTORY_URL: pebble.directory,
        ACME_CA_FILE: join(dataDir, 'pebble-api-ca.pem'),
        ACME_EMAIL: 'ops@apps.test',
        ACME_INTERVAL_SECONDS: '2',
        // A failed name is not tried again within the test: no tight loop.
        ACME_RETRY_BASE_SECONDS: '3600',
      };
      server = await startTestServer(store, env);
      alice = await signUp(server.api, 'alice');
      mallory = await signUp(server.api, 'mallory');
      expect((await alice.api.post('/v1/apps/', { id: 'shop' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/shop/builds/', { image: 'example/shop:v1', procfile: { web: inlineNode(APP_JS) } })).status).toBe(201);
      expect((await mallory.api.post('/v1/apps/', { id: 'mine' })).status).toBe(201);
    });

    afterAll(async () => {
      await server?.close();
      await pebble?.close();
      await dns?.close();
      if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
    });

    it('obtains certificates for an added custom domain and the app name, and serves them by SNI to a client trusting only pebble\'s root', async () => {
      const added = await alice.api.post('/v1/apps/shop/domains/', { domain: 'www.shop.test' });
      expect(added.status).toBe(201);
      expect(Object.keys(added.body).sort()).toEqual(['app', 'created', 'domain', 'owner', 'updated', 'uuid']);

      const tls = await eventually(
        'both names are issued',
        () => tlsOf(alice, 'shop'),
        (r) => r.body.names.length === 2 && r.body.names.every((n) => n.state === 'issued'),
      );
      expect(tls.body).toMatchObject({ automatic: true, https_redirect: false });
      for (const name of tls.body.names) {
        expect(name).toMatchObject({ source: 'acme', reason: null });
        expect(name.expires).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}UTC$/);
      }

      for (const name of ['www.shop.test', 'shop.apps.test']) {
        const answer = await eventually(`HTTPS to ${name} answers`, () => httpsGet(tlsPort, name, root).catch((error: Error) => ({ status: 0, text: error.message, certificate: null })), (r) => r.status === 200);
        expect(answer.text).toBe(`hello from ${name} over https`);
        expect(answer.certificate?.subjectaltname).toBe(`DNS:${name}`);
      }
      // Trusting nothing but the system's roots, the same certificate is refused: it is pebble's.
      await expect(httpsGet(tlsPort, 'www.shop.test', '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n')).rejects.toThrow();
    });

    it('records a name that does not point here as failed, with the server\'s reason, and does not retry it in a loop', async () => {
      expect((await alice.api.post('/v1/apps/shop/domains/', { domain: 'nowhere.shop.test' })).status).toBe(201);

      const failed = await eventually('the name failed', () => stateOf(alice, 'shop', 'nowhere.shop.test'), (n) => n?.state === 'failed');
      expect(failed?.reason).toMatch(/nowhere\.shop\.test/);
      expect(failed?.next_attempt).toMatch(/UTC$/);
      // Three more rounds (every 2 s) leave it as it was: the next attempt is an hour away.
      await new Promise((resolve) => setTimeout(resolve, 6000));
      expect(await stateOf(alice, 'shop', 'nowhere.shop.test')).toEqual(failed);
      const log = await alice.api.get('/v1/apps/shop/logs');
      expect(log.text.split('\n').filter((line) => line.includes('certificate for nowhere.shop.test failed'))).toHaveLength(1);
      // The other names are served as before.
      expect((await httpsGet(tlsPort, 'www.shop.test', root)).status).toBe(200);
    });

    it('redirects plain HTTP to HTTPS with 308 once the app asks for it, leaving the challenge path reachable', async () => {
      expect((await httpGet(routerPort, 'www.shop.test')).status).toBe(200);
      const set = await alice.api.post('/v1/apps/shop/tls/', { https_redirect: true });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ https_redirect: true });

      const redirected = await eventually('the redirect is on', () => httpGet(routerPort, 'www.shop.test', '/cart?x=1'), (r) => r.status === 308);
      expect(redirected.location).toBe(`https://www.shop.test:${tlsPort}/cart?x=1`);
      // A challenge path is never redirected: a token the platform did not publish goes to the app.
      const challenge = await httpGet(routerPort, 'www.shop.test', '/.well-known/acme-challenge/apps-own-token');
      expect(challenge.status).toBe(200);
      expect(challenge.text).toBe('hello from www.shop.test over http');
      // A name without a certificate is not redirected.
      expect((await httpGet(routerPort, 'nowhere.shop.test')).status).toBe(200);
      expect((await alice.api.post('/v1/apps/shop/tls/', { https_redirect: 'sometimes' })).status).toBe(400);
    });

    it('lets nobody else obtain a certificate for a name that is not theirs', async () => {
      // Another tenant can neither take the domain nor the app's platform name, nor see the app's TLS.
      expect((await mallory.api.post('/v1/apps/mine/domains/', { domain: 'www.shop.test' })).status).toBe(400);
      expect((await mallory.api.post('/v1/apps/mine/domains/', { domain: 'shop.apps.test' })).status).toBe(400);
      expect((await mallory.api.post('/v1/apps/mine/domains/', { domain: 'apps.test' })).status).toBe(400);
      expect((await tlsOf(mallory, 'shop')).status).toBe(404);
      expect((await mallory.api.post('/v1/apps/shop/tls/', { https_redirect: false })).status).toBe(404);
      const upload = rsaPair({ commonName: 'www.shop.test', dnsNames: ['www.shop.test'] });
      expect((await mallory.api.post('/v1/certs/', upload)).status).toBe(403);
      // Her own app gets its own name only.
      const mine = await eventually('her app name is issued', () => tlsOf(mallory, 'mine'), (r) => r.body.names.every((n) => n.state === 'issued'));
      expect(mine.body.names.map((n) => n.name)).toEqual(['mine.apps.test']);
      expect((await presented(tlsPort, 'www.shop.test')).issuer.CN).toMatch(/Pebble/);
    });

    it('serves a certificate uploaded for the same name instead: the upload wins', async () => {
      const upload = rsaPair({ commonName: 'www.shop.test', dnsNames: ['www.shop.test'] });
      const stored = await alice.api.post('/v1/certs/', upload);
      expect(stored.status).toBe(201);

      const uploaded = await eventually('the uploaded certificate is presented', () => presented(tlsPort, 'www.shop.test'), (c) => c.issuer.O === 'Example', 45_000);
      expect(uploaded.subject.CN).toBe('www.shop.test');
      expect(await stateOf(alice, 'shop', 'www.shop.test')).toMatchObject({ state: 'issued', source: 'uploaded' });
      expect((await presented(tlsPort, 'shop.apps.test')).issuer.CN).toMatch(/Pebble/);
      // Removing the upload brings the issued certificate back.
      expect((await alice.api.delete('/v1/certs/www.shop.test')).status).toBe(204);
      await eventually('the issued certificate is presented again', () => presented(tlsPort, 'www.shop.test'), (c) => /Pebble/.test(String(c.issuer.CN)), 45_000);
    });

    it('renews: a controller renewing further ahead than the certificate lives gets a new one, which the router serves', async () => {
      const before = await presented(tlsPort, 'shop.apps.test');
      await server.close();
      server = await startTestServer(store, { ...env, ACME_RENEW_DAYS: '3650' });

      const after = await eventually('a new certificate is presented', () => presented(tlsPort, 'shop.apps.test'), (c) => c.serialNumber !== before.serialNumber, 60_000);
      expect(after.subjectaltname).toBe('DNS:shop.apps.test');
      expect((await httpsGet(tlsPort, 'shop.apps.test', root)).text).toBe('hello from shop.apps.test over https');
    });
  });
});
