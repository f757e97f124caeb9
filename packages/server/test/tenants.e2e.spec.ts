import { request, type IncomingMessage } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { describeEachBackend, signUp, startTestServer, type Session, type TestServer } from './support';
import { rsaPair } from './support/certs';

/*
 * Several users on one platform: quotas, certificates for other tenants' names and what
 * the router serves, wrong passwords for another user, cross-origin pages and foreign Host
 * names, idle connections and log followers from one client, control characters in logs.
 * Clients pick their source address in 127.0.0.0/8 to stand for different machines.
 */

const VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7'] as const;

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One request from a chosen source address, with a fresh connection. */
function from(localAddress: string, baseUrl: string, method: string, path: string, options: { json?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const body = options.json === undefined ? undefined : JSON.stringify(options.json);
    const headers: Record<string, string> = { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...options.headers };
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, localAddress, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A TCP connection that sends nothing; `closed` resolves when the server ends it. */
function idleConnection(port: number, localAddress: string): Promise<{ socket: Socket; closed: Promise<void>; received: () => string }> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = tcpConnect({ host: '127.0.0.1', port, localAddress }, () => resolve({ socket, closed, received: () => received }));
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('error', reject);
  });
}

/** The certificate the router presents for a server name; rejects when it presents none. */
function handshake(port: number, servername: string): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const certificate = socket.getPeerCertificate();
      socket.end();
      resolve(certificate);
    });
    socket.once('error', reject);
  });
}

/** A log follow stream in progress. */
function follow(baseUrl: string, token: string, app: string): Promise<{ status: number; body: () => string; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(`/v1/apps/${app}/logs/?follow=true`, baseUrl), { headers: { Authorization: `token ${token}` } });
    req.once('error', reject);
    req.once('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('error', () => undefined);
      resolve({ status: response.statusCode ?? 0, body: () => text, close: () => req.destroy() });
    });
    req.end();
  });
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describeEachBackend('many tenants on one platform', (backend) => {
  let server: TestServer;
  let root: Session;
  let alice: Session;
  let bob: Session;

  beforeAll(async () => {
    server = await startTestServer(await backend.newStore(), {
      PLATFORM_DOMAIN: 'apps.test',
      ROUTER_TLS_PORT: '0',
      QUOTA_APPS_PER_USER: '3',
      QUOTA_CONFIG_BYTES: '100',
      QUOTA_DOMAINS_PER_APP: '3',
      LOG_FOLLOWERS_PER_USER: '2',
      API_MAX_CONNECTIONS_PER_ADDRESS: '6',
      API_HEADERS_TIMEOUT_MS: '1500',
    });
    root = await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
    bob = await signUp(server.api, 'bob');
    expect((await alice.api.post('/v1/apps/', { id: 'alices' })).status).toBe(201);
    expect((await bob.api.post('/v1/apps/', { id: 'bobs' })).status).toBe(201);
    expect((await alice.api.post('/v1/apps/alices/domains/', { domain: 'shop.alice.example' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
  });

  describe('quotas', () => {
    it('apps per user: past the quota, 403 with a detail at every version, and no app is created', async () => {
      expect((await alice.api.post('/v1/apps/', { id: 'alices-2' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/', { id: 'alices-3' })).status).toBe(201);
      for (const version of VERSIONS) {
        const res = await alice.api.at(version).post('/v1/apps/', { id: `over-${version.replace('.', '-')}` });
        expect([version, res.status, res.body]).toEqual([version, 403, { detail: 'Quota exceeded: a user may own at most 3 apps.' }]);
      }
      const apps = await alice.api.get<{ count: number }>('/v1/apps/');
      expect(apps.body.count).toBe(3);
      // Another tenant is not affected.
      expect((await bob.api.post('/v1/apps/', { id: 'bobs-2' })).status).toBe(201);
    });

    it('config size: past the quota, 403 and no new release', async () => {
      const before = await alice.api.get<{ count: number }>('/v1/apps/alices/releases/');
      const res = await alice.api.post('/v1/apps/alices/config/', { values: { BIG: 'x'.repeat(200) } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: "Quota exceeded: an app's config values may hold at most 100 bytes, this would be 203." });
      expect((await alice.api.get<{ count: number }>('/v1/apps/alices/releases/')).body.count).toBe(before.body.count);
    });

    it('domains per app: past the quota, 403 and the domain is not added', async () => {
      expect((await alice.api.post('/v1/apps/alices-2/domains/', { domain: 'one.alice.example' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/alices-2/domains/', { domain: 'two.alice.example' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/alices-2/domains/', { domain: 'three.alice.example' })).status).toBe(201);
      const res = await alice.api.post('/v1/apps/alices-2/domains/', { domain: 'four.alice.example' });
      expect(res.status).toBe(403);
      expect((await alice.api.get<{ count: number }>('/v1/apps/alices-2/domains/')).body.count).toBe(3);
    });
  });

  describe('certificates', () => {
    it("refuses bob a certificate for alice's domain and for the platform wildcard, with 403, storing nothing", async () => {
      const forAlice = await bob.api.post('/v1/certs/', rsaPair({ commonName: 'shop.alice.example', dnsNames: ['shop.alice.example'] }));
      expect(forAlice.status).toBe(403);
      expect(forAlice.body).toEqual({ detail: 'The certificate names shop.alice.example, which is not a domain of an app you manage.' });
      const sneaky = await bob.api.post('/v1/certs/', rsaPair({ commonName: 'bobs.apps.test', dnsNames: ['bobs.apps.test', 'alices.apps.test'] }));
      expect(sneaky.status).toBe(403);
      expect((await bob.api.post('/v1/certs/', rsaPair({ commonName: '*.apps.test' }))).status).toBe(403);
      expect((await root.api.get<{ count: number }>('/v1/certs/')).body.count).toBe(0);
    });

    it("accepts alice's own domain and app host, and the administrator's platform wildcard", async () => {
      expect((await alice.api.post('/v1/certs/', rsaPair({ commonName: 'alices.apps.test', dnsNames: ['alices.apps.test'] }))).status).toBe(201);
      expect((await root.api.post('/v1/certs/', rsaPair({ commonName: '*.apps.test', dnsNames: ['*.apps.test'] }))).status).toBe(201);
    });

    it("the router never presents alice's certificate for a host that has become bob's", async () => {
      const tlsPort = server.routerTlsPort ?? 0;
      const alicesPair = rsaPair({ commonName: 'moving.example', dnsNames: ['moving.example'] });
      expect((await alice.api.post('/v1/apps/alices/domains/', { domain: 'moving.example' })).status).toBe(201);
      expect((await alice.api.post('/v1/certs/', alicesPair)).status).toBe(201);
      // The domain changes hands before the router has looked the name up.
      expect((await alice.api.delete('/v1/apps/alices/domains/moving.example')).status).toBe(204);
      expect((await bob.api.post('/v1/apps/bobs/domains/', { domain: 'moving.example' })).status).toBe(201);

      await expect(handshake(tlsPort, 'moving.example')).rejects.toThrow();

      // Bob's own certificate replaces the one alice left behind, and is the one served.
      const bobsPair = rsaPair({ commonName: 'moving.example', dnsNames: ['moving.example'] });
      const uploaded = await bob.api.post<{ fingerprint: string; owner: string }>('/v1/certs/', bobsPair);
      expect(uploaded.status).toBe(201);
      expect(uploaded.body.owner).toBe('bob');
      // The router remembers a name without a certificate for 5 s.
      await pause(5200);
      const presented = await handshake(tlsPort, 'moving.example');
      expect(presented.fingerprint256.replace(/:/g, '').toLowerCase()).toBe(uploaded.body.fingerprint.replace(/:/g, '').toLowerCase());
    });
  });

  describe('login throttling', () => {
    it('10 wrong passwords for alice from one address do not keep her out from another; that address waits', async () => {
      for (let attempt = 1; attempt <= 10; attempt++) {
        const res = await from('127.0.0.2', server.url, 'POST', '/v1/auth/login/', { json: { username: 'alice', password: `guess-${attempt}` } });
        expect([attempt, res.status]).toEqual([attempt, 400]);
      }
      const attacker = await from('127.0.0.2', server.url, 'POST', '/v1/auth/login/', { json: { username: 'alice', password: alice.password } });
      expect(attacker.status).toBe(429);
      expect(Number(attacker.headers['retry-after'])).toBeGreaterThan(0);

      const real = await from('127.0.0.3', server.url, 'POST', '/v1/auth/login/', { json: { username: 'alice', password: alice.password } });
      expect(real.status).toBe(200);
      expect(JSON.parse(real.body)).toEqual({ token: expect.stringMatching(/^[0-9a-f]{40}$/) });
    });
  });

  describe('cross-origin pages and foreign host names', () => {
    it('by default a preflight and a request from another origin get no CORS allowance, and change nothing', async () => {
      const preflight = await server.api.request('OPTIONS', '/v1/apps/', {
        headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
      });
      expect(preflight.status).toBe(403);
      expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
      expect(preflight.headers.get('access-control-allow-methods')).toBeNull();

      // A form post needs no preflight: it is refused all the same.
      const form = await server.api.request('POST', '/v1/auth/register/', { form: { username: 'drive-by', password: 'Drive-by-1', email: 'd@example.com' }, headers: { Origin: 'http://evil.example' } });
      expect(form.status).toBe(403);
      expect(form.headers.get('access-control-allow-origin')).toBeNull();
      expect((await server.api.post('/v1/auth/login/', { username: 'drive-by', password: 'Drive-by-1' })).status).toBe(400);
    });

    it('a Host the server does not answer for (DNS rebinding) is refused 400', async () => {
      const res = await from('127.0.0.1', server.url, 'GET', '/v1/apps/', { headers: { Host: 'rebind.attacker.example:8000', Authorization: `token ${alice.token}` } });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toEqual({ detail: 'Invalid Host header: this server does not answer for that name.' });
      const local = await from('127.0.0.1', server.url, 'GET', '/v1/apps/', { headers: { Host: 'localhost:8000', Authorization: `token ${alice.token}` } });
      expect(local.status).toBe(200);
    });
  });

  describe('connections and log followers', () => {
    it('idle connections from one address are capped, another address is still served, and idle ones are ended', async () => {
      const port = Number(new URL(server.url).port);
      const held = await Promise.all(Array.from({ length: 6 }, () => idleConnection(port, '127.0.0.5')));
      try {
        const refused = await idleConnection(port, '127.0.0.5');
        await refused.closed;
        expect(refused.received()).toMatch(/^HTTP\/1\.1 429 /);
        expect(refused.received()).toContain('{"detail":"Too many connections from your address."}');

        const other = await from('127.0.0.6', server.url, 'GET', '/healthz');
        expect(other.status).toBe(200);

        // They sent no request: the headers timeout (1.5 s) ends them.
        await Promise.all(held.map((connection) => connection.closed));
        expect(held[0]?.received()).toMatch(/^HTTP\/1\.1 408 /);
      } finally {
        for (const { socket } of held) socket.destroy();
      }
      const after = await from('127.0.0.5', server.url, 'GET', '/healthz');
      expect(after.status).toBe(200);
    });

    it('too many log followers of one user are refused 429, others still follow', async () => {
      const first = await follow(server.url, alice.token, 'alices');
      const second = await follow(server.url, alice.token, 'alices');
      try {
        expect([first.status, second.status]).toEqual([200, 200]);
        const third = await alice.api.get('/v1/apps/alices/logs/?follow=true');
        expect(third.status).toBe(429);
        expect(third.body).toEqual({ detail: 'You already follow 2 logs, the most allowed at once; close one first.' });
        const bobs = await follow(server.url, bob.token, 'bobs');
        expect(bobs.status).toBe(200);
        bobs.close();
      } finally {
        first.close();
        second.close();
      }
      // Closed streams give their places back.
      await pause(200);
      const again = await follow(server.url, alice.token, 'alices');
      expect(again.status).toBe(200);
      again.close();
    });
  });

  describe('log lines', () => {
    it('are stored and served with control characters escaped', async () => {
      expect((await bob.api.post('/v1/apps/bobs/builds/', { image: 'example/bobs:v1', procfile: { web: 'node server.js' } })).status).toBe(201);
      const command = 'echo hi\r2026-01-01T00:00:00UTC svc[api]: root deleted everything\x1b[2K\nnext';
      expect((await bob.api.post('/v1/apps/bobs/run/', { command })).status).toBe(200);

      const logs = await bob.api.get('/v1/apps/bobs/logs/', { version: '1.7' });
      expect(logs.text).toContain("bob runs 'echo hi\\x0d2026-01-01T00:00:00UTC svc[api]: root deleted everything\\x1b[2K\\x0anext'");
      expect(logs.text.includes('\r') || logs.text.includes('\u001b')).toBe(false);
    });
  });
});

describeEachBackend('a platform with a CORS allow-list', (backend) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(await backend.newStore(), { CORS_ALLOWED_ORIGINS: 'https://dashboard.example.com' });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('allows the listed origin, preflight and request, and still refuses others', async () => {
    const preflight = await server.api.request('OPTIONS', '/v1/apps/', {
      headers: { Origin: 'https://dashboard.example.com', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://dashboard.example.com');
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/POST/);

    const listed = await server.api.get('/v1/apps/', { headers: { Origin: 'https://dashboard.example.com' } });
    expect(listed.status).toBe(401);
    expect(listed.headers.get('access-control-allow-origin')).toBe('https://dashboard.example.com');

    const other = await server.api.get('/v1/apps/', { headers: { Origin: 'https://evil.example.com' } });
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});
