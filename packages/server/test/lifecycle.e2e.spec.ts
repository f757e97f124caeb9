import {
  describeEachBackend,
  expectPage,
  login,
  rawRequest,
  signUp,
  startTestServer,
  type AppJson,
  type CertificateJson,
  type ConfigJson,
  type ContainerJson,
  type DomainJson,
  type KeyJson,
  type ReleaseJson,
  type TestServer,
} from './support';
import { rsaPair } from './support/certs';
import { ed25519PublicKey } from './support/ssh-keys';

describeEachBackend('server lifecycle', (backend) => {
  describe('restart on the same data', () => {
    it('keeps users, tokens, apps, config, builds, releases, containers, domains, keys, certificates, permissions and logs', async () => {
      const store = await backend.newStore();
      let server: TestServer = await startTestServer(store);
      try {
        const admin = await signUp(server.api, 'root');
        const alice = await signUp(server.api, 'alice');
        await signUp(server.api, 'bob');
        const api = alice.api;
        expect((await api.post('/v1/apps/', { id: 'durable' })).status).toBe(201);
        expect((await api.post('/v1/apps/durable/config/', { values: { KEEP: 'me' }, memory: { web: '256M' } })).status).toBe(201);
        expect((await api.post('/v1/apps/durable/builds/', { image: 'example/durable:1', procfile: { web: 'serve' } })).status).toBe(201);
        expect((await api.post('/v1/apps/durable/scale/', { web: 2 })).status).toBe(204);
        expect((await api.post('/v1/apps/durable/domains/', { domain: 'durable.example.com' })).status).toBe(201);
        expect((await api.post('/v1/apps/durable/perms/', { username: 'bob' })).status).toBe(201);
        expect((await api.post('/v1/keys/', { id: 'laptop', public: ed25519PublicKey() })).status).toBe(201);
        expect((await api.post('/v1/certs/', rsaPair({ commonName: 'durable.example.com' }))).status).toBe(201);

        const read = async (client: typeof api) => ({
          app: (await client.get<AppJson>('/v1/apps/durable/')).body,
          config: (await client.get<ConfigJson>('/v1/apps/durable/config/')).body,
          releases: expectPage<ReleaseJson>(await client.get('/v1/apps/durable/releases/')).results,
          builds: expectPage(await client.get('/v1/apps/durable/builds/')).results,
          containers: expectPage<ContainerJson>(await client.get('/v1/apps/durable/containers/')).results,
          domains: expectPage<DomainJson>(await client.get('/v1/apps/durable/domains/')).results,
          perms: (await client.get('/v1/apps/durable/perms/')).body,
          keys: expectPage<KeyJson>(await client.get('/v1/keys/')).results,
          cert: (await client.get<CertificateJson>('/v1/certs/durable.example.com')).body,
          logs: (await client.get('/v1/apps/durable/logs/')).text,
        });
        const before = await read(api);
        await server.close();

        server = await startTestServer(store);
        const again = server.api.as(alice.token);
        expect((await again.get('/v1/')).status).toBe(200);
        expect(await read(again)).toEqual(before);
        expect(before.containers).toHaveLength(2);
        expect(before.logs).toMatch(/alice deployed example\/durable:1/);
        expect(await login(server.api, 'alice', alice.password)).toMatch(/^[0-9a-f]{40}$/);
        expect((await server.api.as(admin.token).get('/v1/users/')).status).toBe(200);

        // Numbering goes on where it stopped.
        const next = await again.post<ConfigJson>('/v1/apps/durable/config/', { values: { AFTER: 'restart' } });
        expect(next.status).toBe(201);
        expect(next.headers.get('x-svc-release')).toBe(String(before.releases.length + 1));
        expect(next.body.values).toMatchObject({ KEEP: 'me', AFTER: 'restart' });
      } finally {
        await server.close();
      }
    });
  });

  describe('graceful shutdown', () => {
    it('close() lets a request in flight complete, then refuses new connections', async () => {
      const server = await startTestServer(await backend.newStore());
      const admin = await signUp(server.api, 'root');
      const body = JSON.stringify({ id: 'in-flight' });
      let closed: Promise<void> | undefined;
      let closedYet = false;
      let closedBeforeBodyEnded: boolean | undefined;
      const response = await rawRequest(server.url, {
        method: 'POST',
        path: '/v1/apps/',
        headers: [
          ['Authorization', `token ${admin.token}`],
          ['Content-Type', 'application/json'],
          ['Content-Length', String(Buffer.byteLength(body))],
        ],
        chunks: [body.slice(0, 5), body.slice(5)],
        between: async () => {
          // The server has the request head and part of its body when it is told to stop.
          await new Promise((resolve) => setTimeout(resolve, 100));
          closed = server.close();
          void closed.then(() => {
            closedYet = true;
          });
          await new Promise((resolve) => setTimeout(resolve, 200));
          closedBeforeBodyEnded = closedYet;
          // A new connection is refused while the old request is still in flight.
          await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
        },
      });
      expect(closedBeforeBodyEnded).toBe(false);
      expect(response.status).toBe(201);
      expect(JSON.parse(response.text)).toMatchObject({ id: 'in-flight', owner: 'root' });
      const started = Date.now();
      await closed;
      expect(Date.now() - started).toBeLessThan(5000);
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    });

    it('close() returns promptly while idle keep-alive connections are open', async () => {
      const server = await startTestServer(await backend.newStore());
      for (let i = 0; i < 3; i++) expect((await server.api.get('/healthz')).status).toBe(200);
      const started = Date.now();
      await server.close();
      expect(Date.now() - started).toBeLessThan(3000);
    });
  });

  if (backend.name === 'postgresql') {
    describe('readiness', () => {
      it('GET /readyz answers 503 once the database is gone, while /healthz still answers; API calls get 503, not 500', async () => {
        const store = await backend.newStore();
        const server = await startTestServer(store);
        try {
          const user = await signUp(server.api, 'root');
          expect((await server.api.get('/readyz')).status).toBe(200);
          await backend.breakStore?.(store);
          const res = await server.api.get('/readyz');
          expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { detail: expect.any(String) } });
          expect((await server.api.get('/healthz')).status).toBe(200);
          for (const call of [() => user.api.get('/v1/apps/'), () => server.api.post('/v1/auth/login/', { username: 'root', password: user.password })]) {
            const failed = await call();
            expect({ status: failed.status, body: failed.body }).toEqual({ status: 503, body: { detail: expect.any(String) } });
            expect(failed.text).not.toMatch(/svc_e2e_|\n\s+at |postgres/i);
          }
        } finally {
          await server.close();
        }
      });
    });
  }
});
