import {
  describeEachBackend,
  expectPage,
  login,
  signUp,
  startTestServer,
  useServer,
  type AdminJson,
  type AppJson,
  type ContainerJson,
  type HttpResponse,
  type ReleaseJson,
  type Session,
} from './support';
import { ecdsaPair } from './support/certs';
import { ed25519PublicKey } from './support/ssh-keys';

/** Statuses of concurrent answers, sorted, for comparisons that do not depend on arrival order. */
const statuses = (responses: Array<HttpResponse<unknown>>): number[] => responses.map((r) => r.status).sort((a, b) => a - b);

const uniqueBodies = (responses: Array<HttpResponse<unknown>>): unknown[] => responses.filter((r) => r.status === 400).map((r) => r.body);

describeEachBackend('concurrent requests', (backend) => {
  it('makes exactly one administrator when the first users register at once (several rounds)', async () => {
    const server = await startTestServer(await backend.newStore());
    try {
      // Each round starts with no user at all: the administrator deletes everybody, then itself.
      for (let round = 0; round < 4; round++) {
        const names = Array.from({ length: 6 }, (_, i) => `first${round}x${i}`);
        const responses = await Promise.all(names.map((username) => server.api.post('/v1/auth/register/', { username, password: 'pw', email: `${username}@example.com` })));
        expect(statuses(responses)).toEqual(Array(6).fill(201));
        const admins = responses.filter((r) => r.body.is_superuser === true).map((r) => r.body.username);
        expect([round, admins.length]).toEqual([round, 1]);
        const admin = server.api.as(await login(server.api, admins[0] as string, 'pw'));
        expect(expectPage<AdminJson>(await admin.get('/v1/admin/perms/')).count).toBe(1);
        for (const username of names.filter((name) => name !== admins[0])) {
          expect((await admin.at('1.6').delete('/v1/auth/cancel/', { json: { username } })).status).toBe(204);
        }
        expect((await admin.delete('/v1/auth/cancel/')).status).toBe(204);
      }
    } finally {
      await server.close();
    }
  });

  describe('on one server', () => {
    const server = useServer(backend);
    let root: Session;
    let alice: Session;
    let bob: Session;

    beforeAll(async () => {
      root = await signUp(server.api, 'root');
      alice = await signUp(server.api, 'alice');
      bob = await signUp(server.api, 'bob');
    });

    it('registering one username at once: one 201, the others 400 unique', async () => {
      const responses = await Promise.all(
        Array.from({ length: 5 }, () => server.api.post('/v1/auth/register/', { username: 'twin', password: 'pw', email: 'twin@example.com' })),
      );
      expect(statuses(responses)).toEqual([201, 400, 400, 400, 400]);
      for (const body of uniqueBodies(responses)) expect(body).toEqual({ username: ['This field must be unique.'] });
    });

    it('creating one app id at once: one 201, the others 400 unique', async () => {
      const responses = await Promise.all([alice, bob, alice, bob, alice].map((s) => s.api.post('/v1/apps/', { id: 'contested' })));
      expect(statuses(responses)).toEqual([201, 400, 400, 400, 400]);
      for (const body of uniqueBodies(responses)) expect(body).toEqual({ id: ['This field must be unique.'] });
      expect(expectPage<ReleaseJson>(await server.api.as(alice.token).get('/v1/apps/')).count + expectPage(await bob.api.get('/v1/apps/')).count).toBe(1);
    });

    it('adding one domain to two apps at once: one 201, the others 400 unique', async () => {
      expect((await alice.api.post('/v1/apps/', { id: 'dom-a' })).status).toBe(201);
      expect((await bob.api.post('/v1/apps/', { id: 'dom-b' })).status).toBe(201);
      const responses = await Promise.all([
        alice.api.post('/v1/apps/dom-a/domains/', { domain: 'race.example.com' }),
        bob.api.post('/v1/apps/dom-b/domains/', { domain: 'race.example.com' }),
        alice.api.post('/v1/apps/dom-a/domains/', { domain: 'RACE.example.com.' }),
        bob.api.post('/v1/apps/dom-b/domains/', { domain: 'race.example.com' }),
      ]);
      expect(statuses(responses)).toEqual([201, 400, 400, 400]);
      for (const body of uniqueBodies(responses)) expect(body).toEqual({ domain: ['This field must be unique.'] });
    });

    it('adding one key material or one key id at once: one 201 each, the others 400 unique', async () => {
      const material = ed25519PublicKey();
      const sameMaterial = await Promise.all([alice, bob, alice, bob].map((s, i) => s.api.post('/v1/keys/', { id: `k${i}`, public: material })));
      expect(statuses(sameMaterial)).toEqual([201, 400, 400, 400]);
      for (const body of uniqueBodies(sameMaterial)) expect(body).toEqual({ public: ['This field must be unique.'] });
      const sameId = await Promise.all(Array.from({ length: 4 }, () => alice.api.post('/v1/keys/', { id: 'same-id', public: ed25519PublicKey() })));
      expect(statuses(sameId)).toEqual([201, 400, 400, 400]);
      for (const body of uniqueBodies(sameId)) expect(body).toEqual({ id: ['This field must be unique.'] });
    });

    it('adding one certificate common name at once: one 201, the others 400 unique', async () => {
      // The names are domains of an app both may manage: its owner and a collaborator.
      expect((await alice.api.post('/v1/apps/', { id: 'certified' })).status).toBe(201);
      for (const domain of ['ec.example.com', 'www.ec.example.com']) {
        expect((await alice.api.post('/v1/apps/certified/domains/', { domain })).status).toBe(201);
      }
      expect((await alice.api.post('/v1/apps/certified/perms/', { username: 'bob' })).status).toBe(201);
      const pairs = [ecdsaPair(), ecdsaPair(), ecdsaPair()];
      const responses = await Promise.all(pairs.map((pair, i) => (i % 2 === 0 ? alice : bob).api.post('/v1/certs/', pair)));
      expect(statuses(responses)).toEqual([201, 400, 400]);
      for (const body of uniqueBodies(responses)) expect(body).toEqual({ common_name: ['This field must be unique.'] });
    });

    it('scaling at once leaves containers that match the final structure, numbered 1..n per type', async () => {
      expect((await alice.api.post('/v1/apps/', { id: 'busy' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/busy/builds/', { image: 'example/busy:1', procfile: { web: 'w', worker: 'k' } })).status).toBe(201);
      const counts = [3, 1, 5, 2, 4, 0, 6, 2];
      const responses = await Promise.all(counts.map((n, i) => alice.api.post('/v1/apps/busy/scale/', i % 2 === 0 ? { web: n } : { worker: n })));
      expect(statuses(responses)).toEqual(Array(counts.length).fill(204));
      const app = (await alice.api.get<AppJson>('/v1/apps/busy/')).body;
      const containers = expectPage<ContainerJson>(await alice.api.get('/v1/apps/busy/containers/')).results;
      for (const type of ['web', 'worker']) {
        const nums = containers.filter((c) => c.type === type).map((c) => c.num).sort((a, b) => a - b);
        expect([type, nums]).toEqual([type, Array.from({ length: app.structure[type] ?? 0 }, (_, i) => i + 1)]);
      }
    });

    it('config changes, builds and rollbacks at once: contiguous release numbers, one per success', async () => {
      const api = alice.api;
      const requests = Array.from({ length: 15 }, (_, i) => {
        if (i % 3 === 0) return api.post('/v1/apps/busy/builds/', { image: `example/busy:${i}` });
        if (i % 3 === 1) return api.post('/v1/apps/busy/config/', { values: { [`V${i}`]: 'x' } });
        return api.post('/v1/apps/busy/releases/rollback/', { version: 2 });
      });
      const responses = await Promise.all(requests);
      expect(statuses(responses)).toEqual(Array(15).fill(201));
      const numbers = responses.map((r) => Number(r.headers.get('x-svc-release'))).sort((a, b) => a - b);
      const releases = expectPage<ReleaseJson>(await api.get('/v1/apps/busy/releases/')).results.map((r) => r.version);
      const newest = releases[0] as number;
      expect(numbers).toEqual(Array.from({ length: 15 }, (_, i) => newest - 14 + i));
      expect(releases).toEqual(Array.from({ length: newest }, (_, i) => newest - i));
      const current = expectPage<ContainerJson>(await api.get('/v1/apps/busy/containers/')).results;
      for (const container of current) expect(container.release).toBe(`v${newest}`);
    });

    it('revoking the last two administrators at once: one 204, one 409, one administrator left (several rounds)', async () => {
      let admins = [root, bob];
      expect((await root.api.post('/v1/admin/perms/', { username: 'bob' })).status).toBe(201);
      for (let round = 0; round < 6; round++) {
        const responses = await Promise.all(admins.map((admin) => admin.api.delete(`/v1/admin/perms/${admin.username}/`)));
        expect([round, statuses(responses)]).toEqual([round, [204, 409]]);
        const left = admins.find((_, i) => responses[i]?.status === 409) as Session;
        expect(expectPage<AdminJson>(await left.api.get('/v1/admin/perms/')).results).toEqual([{ username: left.username, is_superuser: true }]);
        const other = admins.find((a) => a !== left) as Session;
        expect((await left.api.post('/v1/admin/perms/', { username: other.username })).status).toBe(201);
        admins = round % 2 === 0 ? [other, left] : [left, other];
      }
    });

    it('deleting one app at once: one 204, the others 404', async () => {
      expect((await alice.api.post('/v1/apps/', { id: 'gone' })).status).toBe(201);
      const responses = await Promise.all(Array.from({ length: 4 }, () => alice.api.delete('/v1/apps/gone/')));
      expect(statuses(responses)).toEqual([204, 404, 404, 404]);
    });
  });
});
