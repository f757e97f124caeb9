import {
  APP_TIMESTAMP,
  UUID,
  describeEachBackend,
  expectDetail,
  expectFieldErrors,
  expectPage,
  expectReleaseHeaders,
  signUp,
  useServer,
  type AppJson,
  type BuildJson,
  type ConfigJson,
  type ContainerJson,
  type ReleaseJson,
  type Session,
} from './support';

const CONFIG_FIELDS = ['app', 'cpu', 'created', 'memory', 'owner', 'tags', 'updated', 'uuid', 'values'];
const BUILD_FIELDS = ['app', 'created', 'dockerfile', 'image', 'owner', 'procfile', 'sha', 'updated', 'uuid'];
const RELEASE_FIELDS = ['app', 'build', 'config', 'created', 'owner', 'summary', 'updated', 'uuid', 'version'];
const VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7'];

describeEachBackend('config, builds and releases', (backend) => {
  const server = useServer(backend);
  let alice: Session;

  beforeAll(async () => {
    await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
  });

  async function createApp(id: string): Promise<void> {
    expect((await alice.api.post('/v1/apps/', { id })).status).toBe(201);
  }

  async function latest(app: string): Promise<ReleaseJson> {
    const page = expectPage<ReleaseJson>(await alice.api.get(`/v1/apps/${app}/releases/`));
    return page.results[0] as ReleaseJson;
  }

  async function setConfig(app: string, body: unknown): Promise<ConfigJson> {
    const res = await alice.api.post<ConfigJson>(`/v1/apps/${app}/config/`, body);
    expect([res.status, res.text]).toEqual([201, expect.any(String)]);
    return res.body;
  }

  describe('config', () => {
    beforeAll(async () => {
      await createApp('cfg');
    });

    it('GET shows the current config with the service variables of release v1 on a fresh app', async () => {
      const res = await alice.api.get<ConfigJson>('/v1/apps/cfg/config/');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(CONFIG_FIELDS);
      expect(res.body).toMatchObject({ app: 'cfg', owner: 'alice', values: { SVC_APP: 'cfg', SVC_RELEASE: 'v1' }, memory: {}, cpu: {}, tags: {} });
      expect(res.body.uuid).toMatch(UUID);
      expect(res.body.created).toMatch(APP_TIMESTAMP);
    });

    it('POST merges values: 201 Config with SVC_APP and the new SVC_RELEASE, and the release headers', async () => {
      const res = await alice.api.post<ConfigJson>('/v1/apps/cfg/config/', { values: { FOO: 'bar', EMPTY: '' } });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(CONFIG_FIELDS);
      expect(res.body.values).toEqual({ FOO: 'bar', EMPTY: '', SVC_APP: 'cfg', SVC_RELEASE: 'v2' });
      expectReleaseHeaders(res, '1.7', 2);
      const again = await setConfig('cfg', { values: { BAR: 'baz' } });
      expect(again.values).toEqual({ FOO: 'bar', EMPTY: '', BAR: 'baz', SVC_APP: 'cfg', SVC_RELEASE: 'v3' });
      expect((await alice.api.get<ConfigJson>('/v1/apps/cfg/config/')).body.values).toEqual(again.values);
    });

    it('a null value unsets the variable; unsetting an absent one is not an error', async () => {
      const res = await setConfig('cfg', { values: { BAR: null, NEVER_SET: null } });
      expect(res.values).toEqual({ FOO: 'bar', EMPTY: '', SVC_APP: 'cfg', SVC_RELEASE: 'v4' });
    });

    it('coerces numbers and booleans to strings', async () => {
      const res = await setConfig('cfg', { values: { NUM: 5, FLT: 1.5, YES: true } });
      expect(res.values).toMatchObject({ NUM: '5', FLT: '1.5', YES: 'true' });
    });

    it.each([
      ['an object value', { values: { OBJ: { a: 1 } } }, ['values']],
      ['an array value', { values: { ARR: [1] } }, ['values']],
      ['a key starting with a digit', { values: { '1ABC': 'x' } }, ['values']],
      ['a key with a dash', { values: { 'A-B': 'x' } }, ['values']],
      ['setting SVC_APP', { values: { SVC_APP: 'other' } }, ['values']],
      ['unsetting SVC_RELEASE', { values: { SVC_RELEASE: null } }, ['values']],
      ['values that are not an object', { values: 'FOO=1' }, ['values']],
      ['a memory limit without unit', { memory: { web: '512' } }, ['memory']],
      ['a memory limit with a bad unit', { memory: { web: '512X' } }, ['memory']],
      ['a memory limit for a bad process type', { memory: { 'Web!': '1G' } }, ['memory']],
      ['cpu shares above 1024', { cpu: { web: 2048 } }, ['cpu']],
      ['negative cpu shares', { cpu: { web: -1 } }, ['cpu']],
      ['non-numeric cpu shares', { cpu: { web: 'lots' } }, ['cpu']],
      ['a tag key with a digit', { tags: { env1: 'x' } }, ['tags']],
      ['a tag value with a space', { tags: { env: 'a b' } }, ['tags']],
      ['several bad parts at once', { values: { '1X': 'a' }, memory: { web: 'x' }, tags: { 'a-b': 'c' } }, ['values', 'memory', 'tags']],
    ])('refuses %s with 400 on the failing fields, creating no release', async (_what, body, fields) => {
      const before = await latest('cfg');
      expectFieldErrors(await alice.api.post('/v1/apps/cfg/config/', body), fields as string[]);
      expect((await latest('cfg')).version).toBe(before.version);
    });

    it('refuses a body that is not an object with 400 non_field_errors', async () => {
      expectFieldErrors(await alice.api.post('/v1/apps/cfg/config/', ['values']), ['non_field_errors']);
      expectFieldErrors(await alice.api.post('/v1/apps/cfg/config/', 'not json object'), ['non_field_errors']);
    });

    it('accepts a body that is a JSON string holding the object (double-encoded by old clients)', async () => {
      const res = await alice.api.post<ConfigJson>('/v1/apps/cfg/config/', JSON.stringify({ values: { DOUBLE: 'yes' } }));
      expect(res.status).toBe(201);
      expect(res.body.values.DOUBLE).toBe('yes');
    });

    it('sets and unsets memory, cpu and tags', async () => {
      const set = await setConfig('cfg', { memory: { web: '512M', worker: '1g' }, cpu: { web: '256' }, tags: { env: 'prod_1' } });
      expect(set.memory).toEqual({ web: '512M', worker: expect.stringMatching(/^1g$/i) });
      expect(set.cpu).toEqual({ web: 256 });
      expect(set.tags).toEqual({ env: 'prod_1' });
      const unset = await setConfig('cfg', { memory: { worker: null }, cpu: { web: null }, tags: { env: null } });
      expect(unset.memory).toEqual({ web: '512M' });
      expect(unset.cpu).toEqual({});
      expect(unset.tags).toEqual({});
    });

    it('refuses a form-encoded config change with 400: values must be an object', async () => {
      const res = await alice.api.request('POST', '/v1/apps/cfg/config/', { form: { values: 'FOO=1' } });
      expect(res.status).toBe(400);
    });
  });

  describe('release summaries', () => {
    beforeAll(async () => {
      await createApp('sums');
    });

    const cases: Array<[string, unknown, string]> = [
      ['added variables, sorted', { values: { B: '1', A: '1', C: '1' } }, 'alice added A, B, C'],
      ['added, changed and deleted variables', { values: { D: '1', A: '2', B: null } }, 'alice added D, changed A, deleted B'],
      ['limits, memory before cpu', { cpu: { web: 100 }, memory: { web: '1G' } }, 'alice changed limits for memory, cpu'],
      ['cpu alone', { cpu: { web: 200 } }, 'alice changed limits for cpu'],
      ['added tags', { tags: { Z: 'z', Y: 'y' } }, 'alice added tag Y, Z'],
      ['added, changed and deleted tags', { tags: { X: 'x', Y: 'yy', Z: null } }, 'alice added tag X, changed tag Y, deleted tag Z'],
      ['a variable and a limit', { values: { FOO: '1' }, memory: { web: '2G' } }, 'alice added FOO and changed limits for memory'],
      ['all three kinds', { values: { C: null }, cpu: { worker: 5 }, tags: { X: null } }, 'alice deleted C and changed limits for cpu and deleted tag X'],
      ['no effective change', { values: { FOO: '1' } }, 'alice changed nothing'],
      ['an empty body', {}, 'alice changed nothing'],
    ];

    it.each(cases)('%s', async (_what, body, summary) => {
      await setConfig('sums', body);
      expect((await latest('sums')).summary).toBe(summary);
    });

    it('deploys name the image, or the short sha when the build has one', async () => {
      expect((await alice.api.post('/v1/apps/sums/builds/', { image: 'registry.example.com/team/app:v7' })).status).toBe(201);
      expect((await latest('sums')).summary).toBe('alice deployed registry.example.com/team/app:v7');
      const sha = 'ABCDEF0123456789abcdef0123456789abcdef01';
      expect((await alice.api.post('/v1/apps/sums/builds/', { image: 'example/app:git', sha })).status).toBe(201);
      expect((await latest('sums')).summary).toBe('alice deployed abcdef0');
    });

    it('rollbacks name the target', async () => {
      // v12 is the first build (v2 to v11 are config changes before it).
      expect((await alice.api.post('/v1/apps/sums/releases/rollback/', { version: 12 })).status).toBe(201);
      expect((await latest('sums')).summary).toBe('alice rolled back to v12');
    });

    it('never mention the service variables', async () => {
      const page = expectPage<ReleaseJson>(await alice.api.get('/v1/apps/sums/releases/'));
      for (const release of page.results) expect(release.summary).not.toMatch(/SVC_/);
    });
  });

  describe('builds', () => {
    beforeAll(async () => {
      await createApp('built');
    });

    it('POST creates a build with the defaults of an image build, and the release headers', async () => {
      const res = await alice.api.post<BuildJson>('/v1/apps/built/builds/', { image: 'example/app:1' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(BUILD_FIELDS);
      expect(res.body).toMatchObject({ app: 'built', image: 'example/app:1', dockerfile: '', procfile: {}, sha: '', owner: 'alice' });
      expect(res.body.uuid).toMatch(UUID);
      expectReleaseHeaders(res, '1.7', 2);
      const release = await latest('built');
      expect(release.build).toBe(res.body.uuid);
      expect((await alice.api.get<AppJson>('/v1/apps/built/')).body.structure).toEqual({ cmd: 1 });
    });

    it('keeps procfile, sha and dockerfile', async () => {
      const body = { image: 'example/app:2', procfile: { web: 'node web.js' }, sha: 'abcdef1', dockerfile: 'FROM node:20\n' };
      const res = await alice.api.post<BuildJson>('/v1/apps/built/builds/', body);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject(body);
      // The app was scaled as cmd=1 by the first deploy; cmd always runs.
      const containers = expectPage<ContainerJson>(await alice.api.get('/v1/apps/built/containers/'));
      expect(containers.results.map((c) => `${c.type}@${c.release}`)).toEqual(['cmd@v3']);
    });

    it('lists builds', async () => {
      const page = expectPage<BuildJson>(await alice.api.get('/v1/apps/built/builds/'));
      expect(page.count).toBe(2);
      expect(page.results.map((b) => b.image).sort()).toEqual(['example/app:1', 'example/app:2']);
      for (const build of page.results) expect(Object.keys(build).sort()).toEqual(BUILD_FIELDS);
    });

    it.each([
      ['no image', {}, ['image']],
      ['an empty image', { image: '' }, ['image']],
      ['an image of 513 characters', { image: `x/${'a'.repeat(511)}` }, ['image']],
      ['an image with a space', { image: 'example/app 1' }, ['image']],
      ['a non-hex sha', { image: 'x/y', sha: 'xyzxyzx' }, ['sha']],
      ['a 6-character sha', { image: 'x/y', sha: 'abcdef' }, ['sha']],
      ['a procfile that is a list', { image: 'x/y', procfile: ['web'] }, ['procfile']],
      ['a procfile command that is a number', { image: 'x/y', procfile: { web: 5 } }, ['procfile']],
      ['a number as image', { image: 5 }, ['image']],
    ])('refuses %s with 400, creating no release', async (_what, body, fields) => {
      const before = await latest('built');
      expectFieldErrors(await alice.api.post('/v1/apps/built/builds/', body), fields as string[]);
      expect((await latest('built')).version).toBe(before.version);
    });

    it('accepts an image reference of 512 characters', async () => {
      const image = `x/${'a'.repeat(510)}`;
      expect((await alice.api.post('/v1/apps/built/builds/', { image })).status).toBe(201);
    });
  });

  describe('release headers by version', () => {
    beforeAll(async () => {
      await createApp('hdrs');
    });

    it('config and build creation carry X-Svc-Release, and Svc-Release too from 1.4', async () => {
      let version = 1;
      for (const api of VERSIONS) {
        version += 1;
        const config = await alice.api.at(api).post('/v1/apps/hdrs/config/', { values: { V: api } });
        expect(config.status).toBe(201);
        expectReleaseHeaders(config, api, version);
        version += 1;
        const build = await alice.api.at(api).post('/v1/apps/hdrs/builds/', { image: `example/app:${api}` });
        expect(build.status).toBe(201);
        expectReleaseHeaders(build, api, version);
      }
    });

    it('a rollback answers {version} with the new number, in the release headers too', async () => {
      const before = (await latest('hdrs')).version;
      for (const api of ['1.0', '1.3', '1.4', '1.7']) {
        // v3 is the first build (v2 the config change before it).
        const res = await alice.api.at(api).post('/v1/apps/hdrs/releases/rollback/', { version: 3 });
        const expected = before + 1 + ['1.0', '1.3', '1.4', '1.7'].indexOf(api);
        expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { version: expected } });
        expectReleaseHeaders(res, api, expected);
      }
    });

    it('reads do not carry release headers', async () => {
      const res = await alice.api.get('/v1/apps/hdrs/config/');
      expect(res.headers.get('x-svc-release')).toBeNull();
      expect(res.headers.get('svc-release')).toBeNull();
    });
  });

  describe('releases', () => {
    beforeAll(async () => {
      await createApp('rel');
      await setConfig('rel', { values: { A: '1' } });
      expect((await alice.api.post('/v1/apps/rel/builds/', { image: 'example/rel:1', procfile: { web: 'run' } })).status).toBe(201);
      await setConfig('rel', { values: { B: '2' } });
    });

    it('lists newest first, with the Release fields', async () => {
      const page = expectPage<ReleaseJson>(await alice.api.get('/v1/apps/rel/releases/'));
      expect(page.results.map((r) => r.version)).toEqual([4, 3, 2, 1]);
      for (const release of page.results) {
        expect(Object.keys(release).sort()).toEqual(RELEASE_FIELDS);
        expect(release.uuid).toMatch(UUID);
        expect(release.created).toMatch(APP_TIMESTAMP);
        expect(release.owner).toBe('alice');
      }
      expect(page.results[3]?.build).toBeNull();
      expect(page.results[0]?.build).toBe(page.results[1]?.build);
    });

    it('GET releases/v<N>/ shows one release; 404 for a version that does not exist', async () => {
      const res = await alice.api.get<ReleaseJson>('/v1/apps/rel/releases/v3/');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ app: 'rel', version: 3, summary: 'alice deployed example/rel:1' });
      expect((await alice.api.get<ReleaseJson>('/v1/apps/rel/releases/v1')).body.version).toBe(1);
      for (const path of ['v99/', 'v0/', 'vx/', '3/']) expectDetail(await alice.api.get(`/v1/apps/rel/releases/${path}`), 404);
    });

    it('the config of a release is the config that was current', async () => {
      const config = await alice.api.get<ConfigJson>('/v1/apps/rel/config/');
      expect((await latest('rel')).config).toBe(config.body.uuid);
    });
  });

  describe('rollback', () => {
    beforeAll(async () => {
      await createApp('rb');
    });

    it('on an app with a single release and no version: 400 "version cannot be below 1" (bare string at 1.0)', async () => {
      expectDetail(await alice.api.post('/v1/apps/rb/releases/rollback/'), 400, 'version cannot be below 1');
      expectDetail(await alice.api.post('/v1/apps/rb/releases/rollback/', { version: null }), 400, 'version cannot be below 1');
      const v10 = await alice.api.at('1.0').post('/v1/apps/rb/releases/rollback/', {});
      expect({ status: v10.status, body: v10.body }).toEqual({ status: 400, body: 'version cannot be below 1' });
    });

    it('without a version rolls back to the release before the current one', async () => {
      await setConfig('rb', { values: { A: '1' } });
      await setConfig('rb', { values: { B: '2' } });
      const res = await alice.api.post('/v1/apps/rb/releases/rollback/', {});
      expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { version: 4 } });
      const release = await latest('rb');
      expect(release).toMatchObject({ version: 4, summary: 'alice rolled back to v2' });
      expect((await alice.api.get<ConfigJson>('/v1/apps/rb/config/')).body.values).toEqual({ A: '1', SVC_APP: 'rb', SVC_RELEASE: 'v4' });
    });

    it('a later config change merges onto the rolled-back config', async () => {
      const res = await setConfig('rb', { values: { C: '3' } });
      expect(res.values).toEqual({ A: '1', C: '3', SVC_APP: 'rb', SVC_RELEASE: 'v5' });
    });

    it('copies the build and config references of the target', async () => {
      expect((await alice.api.post('/v1/apps/rb/builds/', { image: 'example/rb:1' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/rb/builds/', { image: 'example/rb:2' })).status).toBe(201);
      const v6 = (await alice.api.get<ReleaseJson>('/v1/apps/rb/releases/v6/')).body;
      const res = await alice.api.post<{ version: number }>('/v1/apps/rb/releases/rollback/', { version: 6 });
      expect(res.body).toEqual({ version: 8 });
      const v8 = (await alice.api.get<ReleaseJson>('/v1/apps/rb/releases/v8/')).body;
      expect([v8.build, v8.config]).toEqual([v6.build, v6.config]);
      const containers = expectPage<ContainerJson>(await alice.api.get('/v1/apps/rb/containers/'));
      expect(containers.results.map((c) => c.release)).toEqual(['v8']);
    });

    it('to a release without a build, once the app runs one: 409 saying why and naming the releases with a build, at every version; nothing changes', async () => {
      const containers = async (): Promise<Array<Pick<ContainerJson, 'uuid' | 'release' | 'state'>>> =>
        expectPage<ContainerJson>(await alice.api.get('/v1/apps/rb/containers/')).results.map(({ uuid, release, state }) => ({ uuid, release, state }));
      const running = await containers();
      expect(running.map((c) => [c.release, c.state])).toEqual([['v8', 'up']]);
      const why = 'Release v1 has no build: rolling back to it would stop every process of rb. Releases that can be rolled back to: v6 to v8.';
      for (const version of VERSIONS) {
        expectDetail(await alice.api.at(version).post('/v1/apps/rb/releases/rollback/', { version: 1 }), 409, why);
      }
      // v2 to v5 have no build either (config changes made before the first build).
      expectDetail(await alice.api.post('/v1/apps/rb/releases/rollback/', { version: 3 }), 409, /^Release v3 has no build: .* v6 to v8\.$/);
      expect((await latest('rb')).version).toBe(8);
      expect(await containers()).toEqual(running);
      expect((await alice.api.get<ConfigJson>('/v1/apps/rb/config/')).body.values).toEqual({ A: '1', C: '3', SVC_APP: 'rb', SVC_RELEASE: 'v8' });
    });

    it.each([
      ['0', 0],
      ['-1', -1],
      ['"abc"', 'abc'],
      ['1.5', 1.5],
      ['a list', [2]],
    ])('refuses version %s with 400, creating no release', async (_what, version) => {
      const res = await alice.api.post('/v1/apps/rb/releases/rollback/', { version });
      expect(res.status).toBe(400);
      expect((await latest('rb')).version).toBe(8);
    });

    it('answers 404 for a version that does not exist', async () => {
      expect((await alice.api.post('/v1/apps/rb/releases/rollback/', { version: 99 })).status).toBe(404);
      expect((await latest('rb')).version).toBe(8);
    });

    it('accepts the version as a numeric string', async () => {
      expect((await alice.api.post('/v1/apps/rb/releases/rollback/', { version: '7' })).body).toEqual({ version: 9 });
    });
  });

  describe('release numbering under concurrency', () => {
    it('20 concurrent config changes make 20 releases numbered without gap or duplicate', async () => {
      await createApp('race');
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => alice.api.post<ConfigJson>('/v1/apps/race/config/', { values: { [`K${i}`]: String(i) } })),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
      const numbers = responses.map((r) => Number(r.headers.get('x-svc-release'))).sort((a, b) => a - b);
      expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
      expect(responses.map((r) => Number(r.headers.get('svc-release'))).sort((a, b) => a - b)).toEqual(numbers);
      for (const res of responses) expect(res.body.values.SVC_RELEASE).toBe(`v${res.headers.get('x-svc-release')}`);
      const page = expectPage<ReleaseJson>(await alice.api.get('/v1/apps/race/releases/'));
      expect(page.results.map((r) => r.version)).toEqual(Array.from({ length: 21 }, (_, i) => 21 - i));
      // Every change was merged onto the one before it: nothing was lost.
      const config = await alice.api.get<ConfigJson>('/v1/apps/race/config/');
      expect(Object.keys(config.body.values).filter((k) => k.startsWith('K'))).toHaveLength(20);
    });
  });
});
