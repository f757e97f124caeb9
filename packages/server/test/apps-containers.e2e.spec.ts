import {
  APP_TIMESTAMP,
  describeEachBackend,
  expectDetail,
  expectFieldErrors,
  expectNoContent,
  expectNotFound,
  expectPage,
  signUp,
  useServer,
  type AppJson,
  type ContainerJson,
  type Session,
} from './support';
import { createApp, deploy } from './support/apps';

const CONTAINER_FIELDS = ['app', 'created', 'num', 'owner', 'release', 'state', 'type', 'updated', 'uuid'];
const LOG_LINE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}UTC [a-z0-9-]+\[[a-z0-9.]+\]: .+$/;

describeEachBackend('applications', (backend) => {
  const server = useServer(backend);
  let alice: Session;

  beforeAll(async () => {
    // root, signed up first, is the administrator; alice is not.
    await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
  });

  describe('GET /v1/apps/<id>/logs/', () => {
    beforeAll(async () => {
      await createApp(alice, 'logged');
      for (const name of ['A', 'B', 'C']) {
        expect((await alice.api.post('/v1/apps/logged/config/', { values: { [name]: '1' } })).status).toBe(201);
      }
    });

    it('1.7: text/plain, one line per entry, `<timestamp> <source>: <message>`, oldest first', async () => {
      const res = await alice.api.get('/v1/apps/logged/logs/');
      expect(res.status).toBe(200);
      expect(res.contentType).toMatch(/^text\/plain/);
      const lines = res.text.trimEnd().split('\n');
      expect(lines).toHaveLength(4);
      for (const line of lines) expect(line).toMatch(LOG_LINE);
      expect(lines[0]).toMatch(/UTC svc\[api\]: alice created initial release$/);
      expect(lines[3]).toMatch(/UTC svc\[api\]: alice added C$/);
    });

    it('honours log_lines from 1.3: the last N lines', async () => {
      const res = await alice.api.get('/v1/apps/logged/logs/?log_lines=2');
      expect(res.text.trimEnd().split('\n').map((l) => l.replace(/^\S+ /, ''))).toEqual(['svc[api]: alice added B', 'svc[api]: alice added C']);
      const v13 = await alice.api.at('1.3').get<string>('/v1/apps/logged/logs?log_lines=1');
      expect(v13.body.trimEnd().split('\n')).toHaveLength(1);
    });

    it('ignores log_lines before 1.3', async () => {
      const res = await alice.api.at('1.2').get<string>('/v1/apps/logged/logs/?log_lines=1');
      expect(res.status).toBe(200);
      expect(res.body.trimEnd().split('\n')).toHaveLength(4);
      expect((await alice.api.at('1.2').get('/v1/apps/logged/logs/?log_lines=abc')).status).toBe(200);
    });

    it('refuses a log_lines that is not a positive integer from 1.3', async () => {
      for (const value of ['0', '-1', 'abc', '1.5']) {
        expectFieldErrors(await alice.api.get(`/v1/apps/logged/logs/?log_lines=${value}`), ['log_lines']);
      }
    });

    it('1.0 to 1.6: the body is a JSON string of the same lines', async () => {
      const text = (await alice.api.get('/v1/apps/logged/logs/')).text;
      for (const version of ['1.0', '1.6']) {
        const res = await alice.api.at(version).get<string>('/v1/apps/logged/logs/');
        expect(res.contentType).toMatch(/^application\/json/);
        expect(typeof res.body).toBe('string');
        expect(res.body).toBe(text);
      }
    });
  });

  describe('POST /v1/apps/<id>/run/', () => {
    beforeAll(async () => {
      await createApp(alice, 'runner');
    });

    it('without a build: 400 "No build associated with this release" ({detail}; a bare string at 1.0)', async () => {
      expectDetail(await alice.api.post('/v1/apps/runner/run/', { command: 'ls' }), 400, 'No build associated with this release');
      const v10 = await alice.api.at('1.0').post('/v1/apps/runner/run/', { command: 'ls' });
      expect({ status: v10.status, body: v10.body }).toEqual({ status: 400, body: 'No build associated with this release' });
    });

    it('refuses a missing or blank command on the field', async () => {
      expectFieldErrors(await alice.api.post('/v1/apps/runner/run/', {}), ['command']);
      expectFieldErrors(await alice.api.post('/v1/apps/runner/run/', { command: '   ' }), ['command']);
      expectFieldErrors(await alice.api.post('/v1/apps/runner/run/', { command: ['ls'] }), ['command']);
    });

    it('answers {rc, output} from 1.0 to 1.4 and [rc, output] from 1.5', async () => {
      await deploy(alice, 'runner');
      for (const version of ['1.0', '1.1', '1.4']) {
        const res = await alice.api.at(version).post('/v1/apps/runner/run/', { command: 'echo hi' });
        expect([version, res.status, res.body]).toEqual([version, 200, { rc: 0, output: expect.any(String) }]);
      }
      for (const version of ['1.5', '1.7']) {
        const res = await alice.api.at(version).post('/v1/apps/runner/run/', { command: 'echo hi' });
        expect([version, res.status, res.body]).toEqual([version, 200, [0, expect.any(String)]]);
      }
      expect((await alice.api.get('/v1/apps/runner/logs/')).text).toMatch(/alice runs 'echo hi'/);
    });

    it('does not list one-off containers among the app\'s containers', async () => {
      const page = expectPage<ContainerJson>(await alice.api.get('/v1/apps/runner/containers/'));
      expect(page.results.map((c) => c.type)).toEqual(['cmd']);
    });
  });

  describe('containers and scale', () => {
    beforeAll(async () => {
      await createApp(alice, 'scaled');
    });

    it('without a build: scale is 400 "No build associated with this release" (bare string at 1.0)', async () => {
      expectDetail(await alice.api.post('/v1/apps/scaled/scale/', { web: 1 }), 400, 'No build associated with this release');
      const v10 = await alice.api.at('1.0').post('/v1/apps/scaled/scale/', { web: 1 });
      expect({ status: v10.status, body: v10.body }).toEqual({ status: 400, body: 'No build associated with this release' });
      expect(expectPage(await alice.api.get('/v1/apps/scaled/containers/')).count).toBe(0);
    });

    it('the first build with a web process starts one web container', async () => {
      await deploy(alice, 'scaled', { web: 'node server.js', worker: 'node worker.js' });
      expect((await alice.api.get<AppJson>('/v1/apps/scaled/')).body.structure).toEqual({ web: 1 });
      const page = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/'));
      expect(page.count).toBe(1);
      const [container] = page.results;
      expect(Object.keys(container ?? {}).sort()).toEqual(CONTAINER_FIELDS);
      expect(container).toMatchObject({ app: 'scaled', owner: 'alice', type: 'web', num: 1, state: 'up', release: 'v2' });
      expect(container?.created).toMatch(APP_TIMESTAMP);
    });

    it('scales with 204; containers are listed oldest first and by type', async () => {
      expectNoContent(await alice.api.post('/v1/apps/scaled/scale/', { web: 3, worker: '2' }));
      expect((await alice.api.get<AppJson>('/v1/apps/scaled/')).body.structure).toEqual({ web: 3, worker: 2 });
      const all = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/'));
      expect(all.count).toBe(5);
      expect(all.results[0]).toMatchObject({ type: 'web', num: 1 });
      const web = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/web/'));
      expect(web.results.map((c) => c.num).sort()).toEqual([1, 2, 3]);
      const worker = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/worker'));
      expect(worker.results.map((c) => [c.type, c.num, c.state])).toEqual([
        ['worker', 1, 'up'],
        ['worker', 2, 'up'],
      ]);
      expect(expectPage(await alice.api.get('/v1/apps/scaled/containers/other/')).count).toBe(0);
      expect((await alice.api.get('/v1/apps/scaled/logs/')).text).toMatch(/svc\[api\]: alice scaled containers web=3 worker=2/);
    });

    it('scales down from the highest numbers', async () => {
      const before = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/web/')).results;
      expectNoContent(await alice.api.post('/v1/apps/scaled/scale/', { web: 1 }));
      const after = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/web/')).results;
      expect(after.map((c) => c.num)).toEqual([1]);
      expect(after[0]?.uuid).toBe(before.find((c) => c.num === 1)?.uuid);
    });

    it.each([
      ['an unknown process type', { nope: 1 }],
      ['a negative count', { web: -1 }],
      ['a count above 100', { web: 101 }],
      ['a fractional count', { web: 1.5 }],
      ['a non-numeric count', { web: 'many' }],
      ['a bad process type name', { 'Web!': 1 }],
    ])('refuses %s with 400 and changes nothing', async (_what, body) => {
      const res = await alice.api.post('/v1/apps/scaled/scale/', body);
      expect(res.status).toBe(400);
      expect(expectPage(await alice.api.get('/v1/apps/scaled/containers/')).count).toBe(3);
    });

    it('refuses an empty or non-object body with 400', async () => {
      for (const json of [{}, [], 'web=1', 3]) expect((await alice.api.post('/v1/apps/scaled/scale/', json)).status).toBe(400);
    });

    it('accepts cmd, the image\'s own process, whatever the procfile', async () => {
      expectNoContent(await alice.api.post('/v1/apps/scaled/scale/', { cmd: 1 }));
      expectNoContent(await alice.api.post('/v1/apps/scaled/scale/', { cmd: 0 }));
    });

    it('a new release replaces every container by one on the new release', async () => {
      expect((await alice.api.post('/v1/apps/scaled/config/', { values: { X: '1' } })).status).toBe(201);
      const page = expectPage<ContainerJson>(await alice.api.get('/v1/apps/scaled/containers/'));
      expect(page.results.map((c) => `${c.type}.${c.num}@${c.release}`).sort()).toEqual(['web.1@v3', 'worker.1@v3', 'worker.2@v3']);
    });
  });

  describe('restart (1.3)', () => {
    it('does not exist before 1.3', async () => {
      expectNotFound(await alice.api.at('1.2').post('/v1/apps/scaled/containers/restart/'));
      expectNotFound(await alice.api.at('1.2').post('/v1/apps/scaled/containers/web/restart/'));
      expectNotFound(await alice.api.at('1.2').post('/v1/apps/scaled/containers/web/1/restart/'));
    });

    it('restarts all containers, one type, or one container: 200 with a JSON array of them', async () => {
      const all = await alice.api.post<ContainerJson[]>('/v1/apps/scaled/containers/restart/');
      expect(all.status).toBe(200);
      expect(Array.isArray(all.body)).toBe(true);
      expect(all.body.map((c) => `${c.type}.${c.num}`).sort()).toEqual(['web.1', 'worker.1', 'worker.2']);
      for (const container of all.body) expect(Object.keys(container).sort()).toEqual(CONTAINER_FIELDS);

      const workers = await alice.api.at('1.3').post<ContainerJson[]>('/v1/apps/scaled/containers/worker/restart');
      expect(workers.status).toBe(200);
      expect(workers.body.map((c) => `${c.type}.${c.num}`).sort()).toEqual(['worker.1', 'worker.2']);

      const one = await alice.api.post<ContainerJson[]>('/v1/apps/scaled/containers/worker/2/restart/');
      expect(one.status).toBe(200);
      expect(one.body.map((c) => `${c.type}.${c.num}`)).toEqual(['worker.2']);
      expect(one.body[0]?.state).toBe('up');
    });

    it('answers 404 for a container that does not exist', async () => {
      expect((await alice.api.post('/v1/apps/scaled/containers/worker/9/restart/')).status).toBe(404);
    });

    it('restarts nothing on an app without containers: an empty array', async () => {
      const res = await alice.api.post('/v1/apps/runner/containers/web/restart/');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: [] });
    });
  });

});
