import request from 'supertest';
import { fakeCertificatePem, fakePrivateKeyPem, fakePublicKey } from '@svc/core/testing';
import { PLATFORM_DOMAIN, adminAndAlice, auth, createApp, deploy, harness, signUp } from './harness';

const TIMESTAMP = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}UTC$/);
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

const userShape = (username: string, admin: boolean, lastLogin: unknown) => ({
  id: expect.any(Number),
  last_login: lastLogin,
  is_superuser: admin,
  username,
  first_name: '',
  last_name: '',
  email: `${username}@example.com`,
  is_staff: admin,
  is_active: true,
  date_joined: ISO,
  groups: [],
  user_permissions: [],
});

const appShape = (id: string, owner: string, structure: Record<string, number> = {}) => ({
  id,
  uuid: UUID,
  owner,
  structure,
  url: `${id}.${PLATFORM_DOMAIN}`,
  created: TIMESTAMP,
  updated: TIMESTAMP,
});

describe('Accounts', () => {
  const h = harness();
  let root: string;
  beforeAll(async () => {
    ({ root } = await adminAndAlice(h.app));
  });

  it('POST /v1/auth/register → 201 User; the first user is administrator, the password never shows', async () => {
    const fresh = harness();
    const res = await request(fresh.app)
      .post('/v1/auth/register/')
      .send({ username: 'first', password: 'pw', email: 'first@example.com', is_superuser: false })
      .expect(201);
    expect(res.body).toEqual(userShape('first', true, null));
    expect(Object.keys(res.body)).toEqual([
      'id', 'last_login', 'is_superuser', 'username', 'first_name', 'last_name', 'email', 'is_staff', 'is_active',
      'date_joined', 'groups', 'user_permissions',
    ]);
    expect(res.body.date_joined).toBe('2026-11-21T10:00:00.000Z');
    const second = await request(fresh.app).post('/v1/auth/register').send({ username: 'second', password: 'pw', email: 'second@example.com', is_superuser: true }).expect(201);
    expect(second.body.is_superuser).toBe(false);
    expect(JSON.stringify(second.body)).not.toContain('pw');
  });

  it('POST /v1/auth/login → 200 {token}', async () => {
    const res = await request(h.app).post('/v1/auth/login').send({ username: 'alice', password: 'pw-alice' }).expect(200);
    expect(res.body).toEqual({ token: expect.stringMatching(/^[0-9a-f]{40}$/) });
  });

  it('POST /v1/auth/tokens → 200 {token}, and the old token stops working', async () => {
    const t = harness();
    const token = await signUp(t.app, 'solo');
    const res = await request(t.app).post('/v1/auth/tokens/').set('Authorization', auth(token)).expect(200);
    expect(res.body).toEqual({ token: expect.stringMatching(/^[0-9a-f]{40}$/) });
    await request(t.app).get('/v1/apps').set('Authorization', auth(token)).expect(401);
    await request(t.app).get('/v1/apps').set('Authorization', auth(res.body.token)).expect(200);
  });

  it('POST /v1/auth/passwd → 200 with an empty body', async () => {
    const t = harness();
    const token = await signUp(t.app, 'solo', 'old');
    const res = await request(t.app).post('/v1/auth/passwd').set('Authorization', auth(token)).send({ password: 'old', new_password: 'new' }).expect(200);
    expect(res.text).toBe('');
    await request(t.app).post('/v1/auth/login').send({ username: 'solo', password: 'new' }).expect(200);
  });

  it('DELETE /v1/auth/cancel → 204; an administrator may name another user (1.6+ without password)', async () => {
    const t = harness();
    const { root: admin } = await adminAndAlice(t.app);
    const carol = await signUp(t.app, 'carol');
    await request(t.app).delete('/v1/auth/cancel/').set('Authorization', auth(carol)).expect(204);
    await request(t.app).delete('/v1/auth/cancel').set('Authorization', auth(admin)).send({ username: 'alice' }).expect(204);
    await request(t.app).post('/v1/auth/login').send({ username: 'alice', password: 'pw-alice' }).expect(400);
  });

  it('DELETE /v1/auth/cancel for another user needs the administrator password before 1.6', async () => {
    const t = harness();
    const { root: admin } = await adminAndAlice(t.app);
    const res = await request(t.app)
      .delete('/v1/auth/cancel')
      .set('Authorization', auth(admin))
      .set('SVC_API_VERSION', '1.5')
      .send({ username: 'alice' })
      .expect(400);
    expect(res.body).toEqual({ password: ['This field is required.'] });
  });

  it('GET /v1/users → 200 paginated Users (administrators)', async () => {
    const res = await request(h.app).get('/v1/users').set('Authorization', auth(root)).expect(200);
    expect(res.body).toEqual({
      count: 2,
      next: null,
      previous: null,
      results: [userShape('root', true, ISO), userShape('alice', false, ISO)],
    });
  });

  it('GET/POST /v1/admin/perms and DELETE /v1/admin/perms/:username', async () => {
    const list = await request(h.app).get('/v1/admin/perms').set('Authorization', auth(root)).expect(200);
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [{ username: 'root', is_superuser: true }] });
    const grant = await request(h.app).post('/v1/admin/perms/').set('Authorization', auth(root)).send({ username: 'alice' }).expect(201);
    expect(grant.text).toBe('');
    const after = await request(h.app).get('/v1/admin/perms').set('Authorization', auth(root)).expect(200);
    expect(after.body.results).toEqual([
      { username: 'root', is_superuser: true },
      { username: 'alice', is_superuser: true },
    ]);
    await request(h.app).delete('/v1/admin/perms/alice/').set('Authorization', auth(root)).expect(204);
    await request(h.app).delete('/v1/admin/perms/nobody').set('Authorization', auth(root)).expect(404);
  });
});

describe('Applications and containers', () => {
  const h = harness();
  let root: string;
  let alice: string;
  beforeAll(async () => {
    ({ root, alice } = await adminAndAlice(h.app));
    await signUp(h.app, 'bob');
  });

  it('POST /v1/apps → 201 App; GET /v1/apps/:id → 200 App; GET /v1/apps → list', async () => {
    const created = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).send({ id: 'myapp' }).expect(201);
    expect(created.body).toEqual(appShape('myapp', 'alice'));
    expect(created.body.created).toBe('2026-11-21T10:00:00UTC');
    const one = await request(h.app).get('/v1/apps/myapp').set('Authorization', auth(alice)).expect(200);
    expect(one.body).toEqual(created.body);
    const list = await request(h.app).get('/v1/apps').set('Authorization', auth(alice)).expect(200);
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });
  });

  it('POST /v1/apps/:id (1.7) transfers the app → 200 App', async () => {
    await createApp(h.app, alice, 'gift');
    const res = await request(h.app).post('/v1/apps/gift/').set('Authorization', auth(alice)).send({ owner: 'bob' }).expect(200);
    expect(res.body).toEqual(appShape('gift', 'bob'));
    await request(h.app).get('/v1/apps/gift').set('Authorization', auth(alice)).expect(404);
  });

  it('DELETE /v1/apps/:id → 204', async () => {
    await createApp(h.app, alice, 'doomed');
    const res = await request(h.app).delete('/v1/apps/doomed/').set('Authorization', auth(alice)).expect(204);
    expect(res.text).toBe('');
    await request(h.app).get('/v1/apps/doomed').set('Authorization', auth(root)).expect(404);
  });

  it('containers: list, list by type, scale → 204, restart → 200 arrays', async () => {
    await createApp(h.app, alice, 'web');
    await deploy(h.app, alice, 'web', { web: 'serve', worker: 'work' });
    const scale = await request(h.app).post('/v1/apps/web/scale/').set('Authorization', auth(alice)).send({ web: 2, worker: 1 }).expect(204);
    expect(scale.text).toBe('');

    const list = await request(h.app).get('/v1/apps/web/containers').set('Authorization', auth(alice)).expect(200);
    expect(list.body.count).toBe(3);
    expect(list.body.results[0]).toEqual({
      owner: 'alice',
      app: 'web',
      release: 'v2',
      type: 'web',
      num: 1,
      state: 'up',
      uuid: UUID,
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
    const workers = await request(h.app).get('/v1/apps/web/containers/worker/').set('Authorization', auth(alice)).expect(200);
    expect(workers.body.results.map((c: { type: string; num: number }) => `${c.type}.${c.num}`)).toEqual(['worker.1']);

    const all = await request(h.app).post('/v1/apps/web/containers/restart').set('Authorization', auth(alice)).expect(200);
    expect(all.body).toHaveLength(3);
    const byType = await request(h.app).post('/v1/apps/web/containers/web/restart/').set('Authorization', auth(alice)).expect(200);
    expect(byType.body.map((c: { num: number }) => c.num)).toEqual([1, 2]);
    const one = await request(h.app).post('/v1/apps/web/containers/web/2/restart').set('Authorization', auth(alice)).expect(200);
    expect(one.body).toEqual([expect.objectContaining({ type: 'web', num: 2, release: 'v2', state: 'up' })]);
    await request(h.app).post('/v1/apps/web/containers/web/9/restart').set('Authorization', auth(alice)).expect(404);
  });
});

describe('Config, builds and releases', () => {
  const h = harness();
  let alice: string;
  beforeAll(async () => {
    ({ alice } = await adminAndAlice(h.app));
    await createApp(h.app, alice, 'myapp');
  });

  it('GET config of a fresh app shows SVC_APP and SVC_RELEASE v1', async () => {
    const res = await request(h.app).get('/v1/apps/myapp/config').set('Authorization', auth(alice)).expect(200);
    expect(res.body).toEqual({
      owner: 'alice',
      app: 'myapp',
      values: { SVC_APP: 'myapp', SVC_RELEASE: 'v1' },
      memory: {},
      cpu: {},
      tags: {},
      uuid: UUID,
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
  });

  it('POST config → 201 Config with the new release in values and headers', async () => {
    const res = await request(h.app)
      .post('/v1/apps/myapp/config/')
      .set('Authorization', auth(alice))
      .send({ values: { FOO: 'bar', N: 3 }, memory: { web: '512m' }, cpu: { web: '100' }, tags: { zone: 'eu1' } })
      .expect(201);
    expect(res.body).toEqual({
      owner: 'alice',
      app: 'myapp',
      values: { FOO: 'bar', N: '3', SVC_APP: 'myapp', SVC_RELEASE: 'v2' },
      memory: { web: '512M' },
      cpu: { web: 100 },
      tags: { zone: 'eu1' },
      uuid: UUID,
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
    expect(res.headers['svc-release']).toBe('2');
  });

  it('POST builds → 201 Build; GET builds lists it', async () => {
    const res = await request(h.app)
      .post('/v1/apps/myapp/builds')
      .set('Authorization', auth(alice))
      .send({ image: 'example/app:2', procfile: { web: 'serve' }, sha: 'ABCDEF1234' })
      .expect(201);
    expect(res.body).toEqual({
      app: 'myapp',
      image: 'example/app:2',
      dockerfile: '',
      procfile: { web: 'serve' },
      sha: 'abcdef1234',
      owner: 'alice',
      uuid: UUID,
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
    expect(res.headers['x-svc-release']).toBe('3');
    const list = await request(h.app).get('/v1/apps/myapp/builds').set('Authorization', auth(alice)).expect(200);
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [res.body] });
  });

  it('GET releases newest first, GET releases/v<N>, POST rollback → 201 {version}, or 409 to a release without a build', async () => {
    const list = await request(h.app).get('/v1/apps/myapp/releases/').set('Authorization', auth(alice)).expect(200);
    expect(list.body.results.map((r: { version: number }) => r.version)).toEqual([3, 2, 1]);
    const v1 = await request(h.app).get('/v1/apps/myapp/releases/v1/').set('Authorization', auth(alice)).expect(200);
    expect(v1.body).toEqual({
      app: 'myapp',
      version: 1,
      build: null,
      config: UUID,
      summary: 'alice created initial release',
      owner: 'alice',
      uuid: UUID,
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
    const v3 = await request(h.app).get('/v1/apps/myapp/releases/v3').set('Authorization', auth(alice)).expect(200);
    expect(v3.body.build).toEqual(UUID);
    // v2 is the config change made before the build of v3: rolling back to it would stop the app.
    const refused = await request(h.app).post('/v1/apps/myapp/releases/rollback/').set('Authorization', auth(alice)).send({ version: 2 }).expect(409);
    expect(refused.body).toEqual({ detail: 'Release v2 has no build: rolling back to it would stop every process of myapp. Releases that can be rolled back to: v3.' });
    const rollback = await request(h.app).post('/v1/apps/myapp/releases/rollback/').set('Authorization', auth(alice)).send({ version: 3 }).expect(201);
    expect(rollback.body).toEqual({ version: 4 });
    const v4 = await request(h.app).get('/v1/apps/myapp/releases/v4').set('Authorization', auth(alice)).expect(200);
    expect(v4.body.summary).toBe('alice rolled back to v3');
  });
});

describe('Domains, keys, permissions, certificates', () => {
  const h = harness();
  let root: string;
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    ({ root, alice } = await adminAndAlice(h.app));
    bob = await signUp(h.app, 'bob');
    await createApp(h.app, alice, 'myapp');
  });

  it('domains: POST → 201 Domain, GET list, DELETE → 204', async () => {
    const res = await request(h.app).post('/v1/apps/myapp/domains').set('Authorization', auth(alice)).send({ domain: 'WWW.Example.com.' }).expect(201);
    expect(res.body).toEqual({ app: 'myapp', domain: 'www.example.com', owner: 'alice', uuid: UUID, created: TIMESTAMP, updated: TIMESTAMP });
    const list = await request(h.app).get('/v1/apps/myapp/domains/').set('Authorization', auth(alice)).expect(200);
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [res.body] });
    await request(h.app).delete('/v1/apps/myapp/domains/www.example.com/').set('Authorization', auth(alice)).expect(204);
    await request(h.app).delete('/v1/apps/myapp/domains/www.example.com').set('Authorization', auth(alice)).expect(404);
  });

  it('keys: POST → 201 Key, GET list, DELETE → 204', async () => {
    const publicKey = fakePublicKey('alice-laptop', 'alice@laptop');
    const res = await request(h.app).post('/v1/keys').set('Authorization', auth(alice)).send({ id: 'laptop key', public: publicKey }).expect(201);
    expect(res.body).toEqual({
      id: 'laptop key',
      public: publicKey,
      fingerprint: expect.stringMatching(/^SHA256:/),
      owner: 'alice',
      uuid: UUID,
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
    const list = await request(h.app).get('/v1/keys/').set('Authorization', auth(alice)).expect(200);
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [res.body] });
    await request(h.app).delete('/v1/keys/laptop%20key').set('Authorization', auth(alice)).expect(204);
    await request(h.app).delete('/v1/keys/laptop%20key/').set('Authorization', auth(alice)).expect(404);
  });

  it('app permissions: POST → 201 empty, GET {users}, DELETE and POST on the user → 204', async () => {
    const grant = await request(h.app).post('/v1/apps/myapp/perms').set('Authorization', auth(alice)).send({ username: 'bob' }).expect(201);
    expect(grant.text).toBe('');
    const list = await request(h.app).get('/v1/apps/myapp/perms/').set('Authorization', auth(alice)).expect(200);
    expect(list.body).toEqual({ users: ['bob'] });
    await request(h.app).get('/v1/apps/myapp').set('Authorization', auth(bob)).expect(200);
    await request(h.app).delete('/v1/apps/myapp/perms/bob').set('Authorization', auth(alice)).expect(204);
    await request(h.app).get('/v1/apps/myapp').set('Authorization', auth(bob)).expect(404);
    await request(h.app).post('/v1/apps/myapp/perms').set('Authorization', auth(alice)).send({ username: 'bob' }).expect(201);
    const revoke = await request(h.app).post('/v1/apps/myapp/perms/bob/').set('Authorization', auth(alice)).expect(204);
    expect(revoke.text).toBe('');
    expect((await request(h.app).get('/v1/apps/myapp/perms').set('Authorization', auth(alice))).body).toEqual({ users: [] });
  });

  it('certificates: POST → 201 detail without the key, GET list and detail, DELETE → 204', async () => {
    for (const domain of ['www.example.com', 'example.com']) {
      await request(h.app).post('/v1/apps/myapp/domains').set('Authorization', auth(alice)).send({ domain }).expect(201);
    }
    const key = fakePrivateKeyPem('www.example.com');
    const res = await request(h.app)
      .post('/v1/certs/')
      .set('Authorization', auth(alice))
      .send({ certificate: fakeCertificatePem({ cn: 'www.example.com', san: ['www.example.com', 'example.com'] }), key })
      .expect(201);
    expect(res.body).toEqual({
      id: expect.any(Number),
      common_name: 'www.example.com',
      owner: 'alice',
      expires: '2027-11-21T10:00:00UTC',
      starts: '2026-11-01T00:00:00UTC',
      issuer: 'CN=Fake CA',
      san: ['www.example.com', 'example.com'],
      fingerprint: expect.any(String),
      created: TIMESTAMP,
      updated: TIMESTAMP,
    });
    expect(res.text).not.toContain('KEY-FOR');
    const list = await request(h.app).get('/v1/certs').set('Authorization', auth(alice)).expect(200);
    expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [{ common_name: 'www.example.com', expires: '2027-11-21T10:00:00UTC' }] });
    const detail = await request(h.app).get('/v1/certs/www.example.com/').set('Authorization', auth(alice)).expect(200);
    expect(detail.body).toEqual(res.body);
    await request(h.app).get('/v1/certs/www.example.com').set('Authorization', auth(bob)).expect(404);
    await request(h.app).get('/v1/certs/www.example.com').set('Authorization', auth(root)).expect(200);
    await request(h.app).delete('/v1/certs/www.example.com').set('Authorization', auth(alice)).expect(204);
    await request(h.app).get('/v1/certs/www.example.com').set('Authorization', auth(alice)).expect(404);
  });

  it("certificates: 403 for a name that is not a domain of the caller's apps, and nothing is stored", async () => {
    const res = await request(h.app)
      .post('/v1/certs/')
      .set('Authorization', auth(bob))
      .send({ certificate: fakeCertificatePem({ cn: 'www.example.com' }), key: fakePrivateKeyPem('www.example.com') })
      .expect(403);
    expect(res.body).toEqual({ detail: 'The certificate names www.example.com, which is not a domain of an app you manage.' });
    await request(h.app).get('/v1/certs/www.example.com').set('Authorization', auth(root)).expect(404);
  });
});
