import {
  APP_TIMESTAMP,
  UUID,
  describeEachBackend,
  expectDetail,
  expectFieldErrors,
  expectNoContent,
  expectNotFound,
  expectPage,
  expectUnique,
  signUp,
  useServer,
  type AppJson,
  type ConfigJson,
  type HttpResponse,
  type ReleaseJson,
  type Session,
} from './support';
import { createApp, deploy } from './support/apps';

const APP_FIELDS = ['created', 'id', 'owner', 'structure', 'updated', 'url', 'uuid'];

describeEachBackend('applications', (backend) => {
  const server = useServer(backend);
  let admin: Session;
  let alice: Session;
  let bob: Session;

  beforeAll(async () => {
    admin = await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
    bob = await signUp(server.api, 'bob');
  });

  describe('POST /v1/apps/', () => {
    it('creates an app with the Application fields, its url on the platform domain', async () => {
      const res = await alice.api.post<AppJson>('/v1/apps/', { id: 'myapp' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(APP_FIELDS);
      expect(res.body).toMatchObject({ id: 'myapp', owner: 'alice', structure: {}, url: 'myapp.localhost' });
      expect(res.body.uuid).toMatch(UUID);
      expect(res.body.created).toMatch(APP_TIMESTAMP);
      expect(res.body.updated).toMatch(APP_TIMESTAMP);
    });

    it('creates release v1 (no build, "<user> created initial release") and an empty config in the same step', async () => {
      const releases = expectPage<ReleaseJson>(await alice.api.get('/v1/apps/myapp/releases/'));
      expect(releases.count).toBe(1);
      expect(releases.results[0]).toMatchObject({ app: 'myapp', version: 1, build: null, owner: 'alice', summary: 'alice created initial release' });
      const config = await alice.api.get<ConfigJson>('/v1/apps/myapp/config/');
      expect(config.body).toMatchObject({ app: 'myapp', owner: 'alice', values: { SVC_APP: 'myapp', SVC_RELEASE: 'v1' }, memory: {}, cpu: {}, tags: {} });
      expect(releases.results[0]?.config).toBe(config.body.uuid);
    });

    it('generates a pronounceable unused name when no id is given (no body, {} or null id)', async () => {
      for (const options of [{}, { json: {} }, { json: { id: null } }]) {
        const res = await alice.api.request<AppJson>('POST', '/v1/apps', options);
        expect(res.status).toBe(201);
        expect(res.body.id).toMatch(/^[a-z]+-[a-z]+(-[0-9]+)?$/);
        expectNoContent(await alice.api.delete(`/v1/apps/${res.body.id}/`));
      }
    });

    it.each([
      ['upper case', 'MyApp'],
      ['an underscore', 'my_app'],
      ['a leading dash', '-app'],
      ['a trailing dash', 'app-'],
      ['a double dash', 'a--b'],
      ['64 characters', 'a'.repeat(64)],
      ['a dot', 'my.app'],
      ['an empty string', ''],
      ['a number', 42],
      ['an array', ['x']],
    ])('refuses an id with %s: 400 on id', async (_what, id) => {
      expectFieldErrors(await alice.api.post('/v1/apps/', { id }), ['id']);
    });

    it('says what an id may contain', async () => {
      const res = await alice.api.post<{ id: string[] }>('/v1/apps/', { id: 'Bad_Id' });
      expect(res.body.id[0]).toMatch(/^App IDs can only contain \[a-z0-9-\]/);
    });

    it('accepts 63 characters and one character', async () => {
      for (const id of ['b'.repeat(63), 'z']) {
        await createApp(alice, id);
        expectNoContent(await alice.api.delete(`/v1/apps/${id}/`));
      }
    });

    it.each(['svc', 'controller', 'api', 'www', 'router'])('refuses the reserved name %s', async (id) => {
      expect(await alice.api.post('/v1/apps/', { id })).toMatchObject({ status: 400, body: { id: [`${id} is a reserved name.`] } });
    });

    it('refuses a taken id with 400 unique, for the owner and for anyone else', async () => {
      expectUnique(await alice.api.post('/v1/apps/', { id: 'myapp' }), 'id');
      expectUnique(await bob.api.post('/v1/apps/', { id: 'myapp' }), 'id');
    });
  });

  describe('GET /v1/apps and /v1/apps/<id>/', () => {
    beforeAll(async () => {
      await createApp(bob, 'bobs-app');
    });

    it('lists exactly the apps the caller may see; administrators see all', async () => {
      const mine = expectPage<AppJson>(await alice.api.get('/v1/apps'));
      expect(mine.results.map((a) => a.id)).toEqual(['myapp']);
      const bobs = expectPage<AppJson>(await bob.api.get('/v1/apps/'));
      expect(bobs.results.map((a) => a.id)).toEqual(['bobs-app']);
      const all = expectPage<AppJson>(await admin.api.get('/v1/apps'));
      expect(all.results.map((a) => a.id).sort()).toEqual(['bobs-app', 'myapp']);
      for (const app of all.results) expect(Object.keys(app).sort()).toEqual(APP_FIELDS);
    });

    it('shows one app to its owner and administrators', async () => {
      const res = await alice.api.get<AppJson>('/v1/apps/myapp/');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: 'myapp', owner: 'alice' });
      expect((await admin.api.get('/v1/apps/myapp')).status).toBe(200);
    });

    it('answers 404 Not found. for an app that does not exist', async () => {
      expectNotFound(await alice.api.get('/v1/apps/no-such-app/'));
    });
  });

  describe('visibility: an app the caller may not see', () => {
    const reads: Array<[string, string]> = [
      ['GET', ''],
      ['GET', 'config/'],
      ['GET', 'builds/'],
      ['GET', 'releases/'],
      ['GET', 'releases/v1/'],
      ['GET', 'containers/'],
      ['GET', 'containers/web/'],
      ['GET', 'domains/'],
      ['GET', 'perms/'],
      ['GET', 'logs/'],
    ];
    const writes: Array<[string, string, unknown]> = [
      ['POST', 'config/', { values: { X: '1' } }],
      ['POST', 'builds/', { image: 'x/y:1' }],
      ['POST', 'releases/rollback/', {}],
      ['POST', 'domains/', { domain: 'hidden.example.com' }],
      ['DELETE', 'domains/hidden.example.com', undefined],
      ['POST', 'perms/', { username: 'bob' }],
      ['POST', 'perms/bob', undefined],
      ['DELETE', 'perms/bob', undefined],
      ['POST', 'scale/', { web: 1 }],
      ['POST', 'run/', { command: 'ls' }],
      ['POST', 'containers/restart/', undefined],
      ['POST', '', { owner: 'bob' }],
      ['DELETE', '', undefined],
    ];

    async function call(session: Session, version: string, method: string, app: string, path: string, json?: unknown): Promise<HttpResponse> {
      return session.api.at(version).request(method as 'GET', `/v1/apps/${app}/${path}`, json === undefined ? {} : { json });
    }

    it('from 1.1 answers every read and write exactly like an app that does not exist', async () => {
      for (const version of ['1.1', '1.7']) {
        for (const [method, path] of reads) {
          const hidden = await call(bob, version, method, 'myapp', path);
          const absent = await call(bob, version, method, 'no-such-app', path);
          expect([version, method, path, hidden.status, hidden.body]).toEqual([version, method, path, 404, { detail: 'Not found.' }]);
          expect(absent.body).toEqual(hidden.body);
        }
        for (const [method, path, json] of writes) {
          if (version === '1.1' && path === '') continue;
          const hidden = await call(bob, version, method, 'myapp', path, json);
          expect([version, method, path, hidden.status, hidden.body]).toEqual([version, method, path, 404, { detail: 'Not found.' }]);
        }
      }
      // Nothing changed.
      const releases = expectPage<ReleaseJson>(await alice.api.get('/v1/apps/myapp/releases/'));
      expect(releases.count).toBe(1);
      expect((await alice.api.get<AppJson>('/v1/apps/myapp/')).body.owner).toBe('alice');
    });

    it('at 1.0 answers 403, while an app that does not exist is 404', async () => {
      for (const [method, path] of reads) {
        expect([method, path, (await call(bob, '1.0', method, 'myapp', path)).status]).toEqual([method, path, 403]);
      }
      for (const [method, path, json] of writes) {
        // App update (1.7) and restart (1.3) do not exist at 1.0.
        if ((path === '' && method === 'POST') || path.includes('restart')) continue;
        expect([method, path, (await call(bob, '1.0', method, 'myapp', path, json)).status]).toEqual([method, path, 403]);
      }
      expectDetail(await bob.api.at('1.0').get('/v1/apps/myapp/'), 403);
      expect((await bob.api.at('1.0').get('/v1/apps/no-such-app/')).status).toBe(404);
    });
  });

  describe('DELETE /v1/apps/<id>/', () => {
    it('deletes the app and everything under it: 204, then 404, and the id is free again', async () => {
      await createApp(alice, 'doomed');
      await deploy(alice, 'doomed');
      expect((await alice.api.post('/v1/apps/doomed/domains/', { domain: 'doomed.example.com' })).status).toBe(201);
      expectNoContent(await alice.api.delete('/v1/apps/doomed/'));
      expectNotFound(await alice.api.get('/v1/apps/doomed/'));
      expectNotFound(await alice.api.get('/v1/apps/doomed/releases/'));
      const again = await createApp(alice, 'doomed');
      expect(again.structure).toEqual({});
      expect(expectPage<ReleaseJson>(await alice.api.get('/v1/apps/doomed/releases/')).count).toBe(1);
      expect(expectPage(await alice.api.get('/v1/apps/doomed/domains/')).count).toBe(0);
      expect((await alice.api.post('/v1/apps/doomed/domains/', { domain: 'doomed.example.com' })).status).toBe(201);
      expectNoContent(await alice.api.delete('/v1/apps/doomed'));
    });

    it('is for the owner and administrators only: a collaborator gets 403', async () => {
      await createApp(alice, 'shared-del');
      expect((await alice.api.post('/v1/apps/shared-del/perms/', { username: 'bob' })).status).toBe(201);
      expectDetail(await bob.api.delete('/v1/apps/shared-del/'), 403);
      expectNoContent(await admin.api.delete('/v1/apps/shared-del/'));
    });
  });

  describe('POST /v1/apps/<id>/ (1.7): transfer', () => {
    it('does not exist before 1.7', async () => {
      await createApp(alice, 'movable');
      expectNotFound(await alice.api.at('1.6').post('/v1/apps/movable/', { owner: 'bob' }));
      expect((await alice.api.get<AppJson>('/v1/apps/movable/')).body.owner).toBe('alice');
    });

    it('answers 200 with the JSON Application; without owner nothing changes', async () => {
      const res = await alice.api.post<AppJson>('/v1/apps/movable/', {});
      expect(res.status).toBe(200);
      expect(res.contentType).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ id: 'movable', owner: 'alice' });
    });

    it('refuses an unknown user with 404 and a collaborator with 403', async () => {
      expectDetail(await alice.api.post('/v1/apps/movable/', { owner: 'nobody-here' }), 404);
      expect((await alice.api.post('/v1/apps/movable/perms/', { username: 'bob' })).status).toBe(201);
      expectDetail(await bob.api.post('/v1/apps/movable/', { owner: 'bob' }), 403);
      expectNoContent(await alice.api.delete('/v1/apps/movable/perms/bob'));
      expectFieldErrors(await alice.api.post('/v1/apps/movable/', { owner: 7 }), ['owner']);
    });

    it('transfers ownership: the new owner sees it, the previous owner loses access, the log says so', async () => {
      const res = await alice.api.post<AppJson>('/v1/apps/movable/', { owner: 'bob' });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(APP_FIELDS);
      expect(res.body).toMatchObject({ id: 'movable', owner: 'bob' });
      expectNotFound(await alice.api.get('/v1/apps/movable/'));
      expect((await bob.api.get<AppJson>('/v1/apps/movable/')).body.owner).toBe('bob');
      const logs = await bob.api.get('/v1/apps/movable/logs/');
      expect(logs.text).toMatch(/svc\[api\]: alice transferred movable from alice to bob/);
    });

    it('lets an administrator transfer any app', async () => {
      const res = await admin.api.post<AppJson>('/v1/apps/movable/', { owner: 'alice' });
      expect(res.body.owner).toBe('alice');
      expectNoContent(await alice.api.delete('/v1/apps/movable/'));
    });
  });

  describe('permissions', () => {
    beforeAll(async () => {
      await createApp(alice, 'team');
      await signUp(server.api, 'carol');
    });

    it('starts with no collaborators', async () => {
      const res = await alice.api.get('/v1/apps/team/perms/');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { users: [] } });
    });

    it('grants with 201 and an empty body, idempotently; lists collaborators sorted', async () => {
      for (const username of ['carol', 'bob', 'bob']) {
        const res = await alice.api.post('/v1/apps/team/perms/', { username });
        expect({ status: res.status, text: res.text }).toEqual({ status: 201, text: '' });
      }
      expect((await alice.api.get('/v1/apps/team/perms')).body).toEqual({ users: ['bob', 'carol'] });
    });

    it('refuses an unknown user with 404 and a missing username with 400', async () => {
      expectDetail(await alice.api.post('/v1/apps/team/perms/', { username: 'nobody-here' }), 404);
      expectFieldErrors(await alice.api.post('/v1/apps/team/perms/', {}), ['username']);
    });

    it('lets a collaborator see and change the app, but not delete, transfer or manage collaborators', async () => {
      expect((await bob.api.get('/v1/apps/team/')).status).toBe(200);
      expect(expectPage<AppJson>(await bob.api.get('/v1/apps')).results.map((a) => a.id)).toContain('team');
      expect((await bob.api.post('/v1/apps/team/config/', { values: { BY_BOB: 'yes' } })).status).toBe(201);
      expectDetail(await bob.api.post('/v1/apps/team/perms/', { username: 'root' }), 403);
      expectDetail(await bob.api.delete('/v1/apps/team/perms/carol'), 403);
      expectDetail(await bob.api.delete('/v1/apps/team/'), 403);
      expectDetail(await bob.api.post('/v1/apps/team/', { owner: 'bob' }), 403);
      expect((await alice.api.get('/v1/apps/team/perms/')).body).toEqual({ users: ['bob', 'carol'] });
    });

    it('revokes with POST .../perms/<username> (the seed\'s form) and with DELETE: 204', async () => {
      const post = await alice.api.post('/v1/apps/team/perms/carol');
      expectNoContent(post);
      expect((await alice.api.get('/v1/apps/team/perms/')).body).toEqual({ users: ['bob'] });
      expect((await alice.api.post('/v1/apps/team/perms/', { username: 'carol' })).status).toBe(201);
      expectNoContent(await alice.api.delete('/v1/apps/team/perms/carol/'));
      expect((await alice.api.get('/v1/apps/team/perms/')).body).toEqual({ users: ['bob'] });
      expect((await alice.api.delete('/v1/apps/team/perms/carol')).status).toBe(404);
    });

    it('lets a collaborator remove themselves, after which the app is hidden from them', async () => {
      expectNoContent(await bob.api.post('/v1/apps/team/perms/bob/'));
      expectNotFound(await bob.api.get('/v1/apps/team/'));
      expect((await alice.api.get('/v1/apps/team/perms/')).body).toEqual({ users: [] });
    });

    it('refuses to make the owner a collaborator of their own app', async () => {
      expect((await alice.api.post('/v1/apps/team/perms/', { username: 'alice' })).status).toBe(400);
    });

    it('writes grants and revocations to the app\'s log', async () => {
      const text = (await alice.api.get('/v1/apps/team/logs/?log_lines=1000')).text;
      expect(text).toMatch(/alice added bob to team collaborators/);
      expect(text).toMatch(/bob removed bob from team collaborators/);
    });
  });
});
