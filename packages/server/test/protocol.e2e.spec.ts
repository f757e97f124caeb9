import { randomUUID } from 'node:crypto';
import { createDatabase } from '@svc/persistence-typeorm';
import {
  describeEachBackend,
  expectDetail,
  expectFieldErrors,
  expectNotFound,
  expectPage,
  expectUnauthenticated,
  expectVersionHeaders,
  rawRequest,
  signUp,
  useServer,
  type ApiClient,
  type HttpResponse,
  type KeyJson,
  type ReleaseJson,
  type Session,
} from './support';
import { ed25519PublicKey } from './support/ssh-keys';

const VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7'];
const MIB = 1024 * 1024;

describeEachBackend('protocol', (backend) => {
  const server = useServer(backend, { CORS_ALLOWED_ORIGINS: 'https://dashboard.example.com' });
  let alice: Session;

  beforeAll(async () => {
    await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
    expect((await alice.api.post('/v1/apps/', { id: 'proto' })).status).toBe(201);
  });

  describe('API version selection and version headers', () => {
    it.each(VERSIONS)('%s: successes and errors carry the version headers of the version', async (version) => {
      expectVersionHeaders(await alice.api.at(version).get('/v1/apps'), version);
      expectVersionHeaders(await alice.api.at(version).get('/v1/apps', { token: null }), version);
      expectVersionHeaders(await alice.api.at(version).get('/v1/apps/no-such-app/'), version);
      expectVersionHeaders(await alice.api.at(version).post('/v1/apps/', { id: 'Bad!' }), version);
      expectVersionHeaders(await server.api.at(version).get('/healthz'), version);
    });

    it('defaults to 1.7', async () => {
      expectVersionHeaders(await alice.api.get('/v1/apps'), '1.7');
      expectVersionHeaders(await server.api.get('/nowhere'), '1.7');
    });

    it('accepts the version in SVC_API_VERSION, Svc-Api-Version and X_SVC_API_VERSION', async () => {
      for (const header of ['SVC_API_VERSION', 'Svc-Api-Version', 'X_SVC_API_VERSION', 'svc-api-version']) {
        const res = await alice.api.get('/v1/apps', { version: '1.2', versionHeader: header });
        expect([header, res.status]).toEqual([header, 200]);
        expectVersionHeaders(res, '1.2');
      }
    });

    it('the Deis v1 client (API 1.7, reading DEIS_API_VERSION) finds its own version, so it prints no warning', async () => {
      const res = await alice.api.get('/v1/apps', { headers: { 'User-Agent': 'Deis Client v1.13.4' } });
      expect(res.headers.get('deis_api_version')).toBe('1.7');
      expect(res.headers.get('deis_platform_version')).toBe(res.headers.get('svc_platform_version'));
    });

    it('Deis v1 config:pull then config:push: the pulled SVC_APP and SVC_RELEASE are accepted and ignored, other values are 400', async () => {
      const pulled = await alice.api.get('/v1/apps/proto/config/');
      const values = pulled.body.values as Record<string, string>;
      expect(values).toEqual(expect.objectContaining({ SVC_APP: 'proto' }));
      const pushed = await alice.api.post('/v1/apps/proto/config/', { values: { ...values, DEIS_PUSHED: '1' } });
      expect(pushed.status).toBe(201);
      const after = pushed.body.values as Record<string, string>;
      expect(after.DEIS_PUSHED).toBe('1');
      expect(after.SVC_APP).toBe('proto');
      expect(after.SVC_RELEASE).not.toBe(values.SVC_RELEASE);
      // The pulled file is now stale: its SVC_RELEASE names a release that is no longer current.
      const stale = await alice.api.post('/v1/apps/proto/config/', { values });
      expectFieldErrors(stale, ['values']);
      expect(stale.body).toEqual({ values: ['SVC_RELEASE is set by the platform and cannot be changed.'] });
      const other = await alice.api.post('/v1/apps/proto/config/', { values: { SVC_APP: 'other' } });
      expectFieldErrors(other, ['values']);
      expect(other.body).toEqual({ values: ['SVC_APP is set by the platform and cannot be changed.'] });
      const unchanged = await alice.api.get('/v1/apps/proto/config/');
      expect(unchanged.body.values).toEqual(after);
    });

    it('the platform version is a dotted version number', async () => {
      const res = await alice.api.get('/v1/apps');
      expect(res.headers.get('svc_platform_version')).toMatch(/^\d+\.\d+\.\d+$/);
    });

    it.each(['1.8', '2.0', '1', 'abc', '1.07', ''])('answers 406 for API version "%s", with the default version\'s headers', async (version) => {
      const res = await alice.api.get('/v1/apps', { version });
      if (version === '') {
        // An empty header is no choice at all for some clients; either way it is never a 500.
        expect([200, 406]).toContain(res.status);
        return;
      }
      expectDetail(res, 406, `Unsupported API version: ${version}`);
      expectVersionHeaders(res, '1.7');
    });

    it('answers 405 to a client of another major version', async () => {
      for (const [header, value] of [
        ['Svc-Version', '2.0'],
        ['X-Svc-Version', '3'],
      ]) {
        const res = await alice.api.get('/v1/apps', { headers: { [header as string]: value as string } });
        expectDetail(res, 405, `Client and server versions do not match. Client version: ${value} Server version: 1`);
        expectVersionHeaders(res, '1.7');
      }
      expect((await alice.api.get('/v1/apps', { headers: { 'Svc-Version': '1.9' } })).status).toBe(200);
    });

    it('exposes every version and release header to browsers of an allowed origin (CORS_ALLOWED_ORIGINS)', async () => {
      const res = await alice.api.get('/v1/apps', { headers: { Origin: 'https://dashboard.example.com' } });
      expect(res.headers.get('access-control-allow-origin')).toBe('https://dashboard.example.com');
      const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/).map((h) => h.toLowerCase());
      for (const name of ['SVC_API_VERSION', 'SVC_PLATFORM_VERSION', 'X_SVC_API_VERSION', 'X_SVC_PLATFORM_VERSION', 'Svc-Release', 'X-Svc-Release']) {
        expect(exposed).toContain(name.toLowerCase());
      }
    });

    it('answers a CORS preflight without credentials', async () => {
      const res = await server.api.request('OPTIONS', '/v1/apps/proto/config/', {
        headers: { Origin: 'https://dashboard.example.com', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
      });
      expect(res.status).toBeLessThan(300);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://dashboard.example.com');
      expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
    });

    it('answers HEAD wherever GET is answered, without a body', async () => {
      const res = await alice.api.request('HEAD', '/v1/apps/proto/');
      expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: '' });
      expectVersionHeaders(res, '1.7');
      expect((await server.api.request('HEAD', '/v1/apps/proto/')).status).toBe(401);
    });

    it('gives every response a request id', async () => {
      for (const res of [await alice.api.get('/v1/apps'), await server.api.get('/v1/apps'), await server.api.get('/nowhere')]) {
        expect(res.headers.get('x-request-id')).toMatch(/^\S{8,}$/);
      }
    });
  });

  describe('error statuses', () => {
    it('401 with WWW-Authenticate: Token at every version', async () => {
      for (const version of VERSIONS) expectUnauthenticated(await server.api.at(version).get('/v1/apps/'));
    });

    it('405 for a known path with another method, with Allow and the default version\'s headers', async () => {
      const cases: Array<[string, string]> = [
        ['PUT', '/v1/apps/'],
        ['PATCH', '/v1/apps/proto/'],
        ['DELETE', '/v1/keys/'],
        ['GET', '/v1/auth/login/'],
        ['PUT', '/v1/apps/proto/config/'],
        ['DELETE', '/v1/apps/proto/releases/'],
      ];
      for (const [method, path] of cases) {
        const res = await alice.api.at('1.2').request(method as 'PUT', path);
        expect([method, path, res.status]).toEqual([method, path, 405]);
        expect(res.body).toEqual({ detail: expect.any(String) });
        expect(res.headers.get('allow')).toMatch(/[A-Z]/);
        expectVersionHeaders(res, '1.7');
      }
      const res = await alice.api.request('PUT', '/v1/apps/');
      expect(res.headers.get('allow')?.split(/\s*,\s*/)).toEqual(expect.arrayContaining(['GET', 'POST']));
    });

    it('404 {"detail": "Not found."} in JSON for unknown paths, never an HTML page', async () => {
      for (const path of ['/nope', '/v1/nope', '/v1/apps/proto/nope/', '/v2/apps', '/v1/apps/proto/config/extra/deep', '/']) {
        const res = await alice.api.get(path);
        expect([path, res.status]).toEqual([path, 404]);
        expect(res.contentType).toMatch(/^application\/json/);
        expectNotFound(res);
      }
      expectNotFound(await server.api.post('/v1/nope', { a: 1 }));
    });

    it('413 for a body over 1 MiB, with or without credentials required', async () => {
      const big = JSON.stringify({ id: 'x', pad: 'a'.repeat(MIB) });
      for (const [path, token] of [
        ['/v1/apps/', alice.token],
        ['/v1/auth/register/', null],
        ['/v1/auth/login/', null],
      ] as const) {
        const res = await server.api.request('POST', path, { raw: big, contentType: 'application/json', token });
        expectDetail(res, 413);
      }
      expect(expectPage(await alice.api.get('/v1/apps')).count).toBe(1);
    });

    it('a body just under 1 MiB is read (and judged on its fields)', async () => {
      const res = await alice.api.post('/v1/keys/', { id: 'big', public: 'a'.repeat(MIB - 100) });
      expectFieldErrors(res, ['public']);
    });

    it('415 for a body that is neither JSON nor form-encoded', async () => {
      for (const contentType of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/json; charset=latin1']) {
        const res = await alice.api.request('POST', '/v1/apps/', { raw: '{"id": "x415"}', contentType });
        expectDetail(res, 415);
      }
      expect((await alice.api.request('POST', '/v1/apps/', { raw: '{"id": "x415"}' })).status).toBe(415);
      expectNotFound(await alice.api.get('/v1/apps/x415/'));
      const vendor = await alice.api.request('POST', '/v1/apps/', { raw: '{"id": "vendor-json"}', contentType: 'application/vnd.api+json' });
      expect(vendor.status).toBe(201);
      expect((await alice.api.delete('/v1/apps/vendor-json/')).status).toBe(204);
    });

    it('400 "JSON parse error - ..." for malformed JSON, without echoing the input', async () => {
      for (const raw of ['{"id": ', '{id: 1}', "{'id': 'x'}", '[1,]', '{"a":1}{"b":2}', '\u0000']) {
        const res = await alice.api.request<{ detail: string }>('POST', '/v1/apps/', { raw, contentType: 'application/json' });
        expect([raw, res.status]).toEqual([raw, 400]);
        expect(res.body.detail).toMatch(/^JSON parse error - /);
        expect(res.text).not.toMatch(/at JSON\.parse|node_modules|\n\s+at /);
      }
    });

    it('400 for a NUL character in a JSON string', async () => {
      const res = await alice.api.request('POST', '/v1/apps/', { raw: '{"id": "a\\u0000b"}', contentType: 'application/json' });
      expectDetail(res, 400);
    });

    it('400 for bad percent-encoding in the path, not 500', async () => {
      const res = await rawRequest(server.current.url, { method: 'GET', path: '/v1/apps/%E0%A4%A/', headers: [['Authorization', `token ${alice.token}`]] });
      expect([400, 404]).toContain(res.status);
      expect(JSON.parse(res.text)).toEqual({ detail: expect.any(String) });
    });
  });

  describe('trailing slashes', () => {
    it('every path works with and without its trailing slash, without a redirect', async () => {
      const paths = [
        '/v1/apps',
        '/v1/apps/proto',
        '/v1/apps/proto/config',
        '/v1/apps/proto/releases',
        '/v1/apps/proto/releases/v1',
        '/v1/apps/proto/builds',
        '/v1/apps/proto/containers',
        '/v1/apps/proto/containers/web',
        '/v1/apps/proto/domains',
        '/v1/apps/proto/perms',
        '/v1/apps/proto/logs',
        '/v1/keys',
        '/v1/certs',
        '/v1/users',
        '/v1/admin/perms',
        '/v1',
      ];
      const token = (path: string) => (path.startsWith('/v1/users') || path.startsWith('/v1/admin') ? undefined : alice.token);
      for (const path of paths) {
        for (const variant of [path, `${path}/`]) {
          const res = await alice.api.get(variant, { token: token(path) ?? null });
          const expected = token(path) === undefined ? 401 : 200;
          expect([variant, res.status]).toEqual([variant, expected]);
        }
      }
      for (const path of ['/healthz', '/healthz/', '/readyz', '/readyz/']) expect([path, (await server.api.get(path)).status]).toEqual([path, 200]);
    });

    it('writes work both ways too', async () => {
      for (const path of ['/v1/apps/proto/config', '/v1/apps/proto/config/']) {
        expect((await alice.api.post(path, { values: { SLASH: path.length.toString() } })).status).toBe(201);
      }
      for (const path of ['/v1/auth/login', '/v1/auth/login/']) {
        expect((await server.api.post(path, { username: 'alice', password: alice.password })).status).toBe(200);
      }
      const keys: Array<[string, string]> = [
        ['k1', '/v1/keys/k1'],
        ['k2', '/v1/keys/k2/'],
      ];
      for (const [id, path] of keys) {
        expect((await alice.api.post('/v1/keys', { id, public: ed25519PublicKey() })).status).toBe(201);
        expect((await alice.api.delete(path)).status).toBe(204);
      }
    });
  });

  describe('health', () => {
    it('GET /healthz answers 200 {"status": "ok"} without credentials', async () => {
      const res = await server.api.get('/healthz');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'ok' } });
    });

    it('GET /readyz answers 200 while the database answers', async () => {
      expect((await server.api.get('/readyz')).status).toBe(200);
    });
  });

  describe('pagination', () => {
    const app = 'paged';
    /** Releases of the paged app: more than one default page. */
    const total = 130;
    /** Keys of the pager: more than the largest page. */
    const keys = 1001;
    let pager: Session;

    const keyId = (n: number): string => `key-${String(n).padStart(4, '0')}`;

    /** Runs `count` numbered tasks, a few at a time. */
    async function inParallel(count: number, task: (n: number) => Promise<void>): Promise<void> {
      const pending = Array.from({ length: count }, (_, i) => i);
      const worker = async (): Promise<void> => {
        for (let next = pending.shift(); next !== undefined; next = pending.shift()) await task(next);
      };
      await Promise.all(Array.from({ length: 4 }, worker));
    }

    beforeAll(async () => {
      expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
      // Release v1 exists; config changes add the rest.
      await inParallel(total - 1, async (n) => {
        const res = await alice.api.post(`/v1/apps/${app}/config/`, { values: { N: String(n) } });
        if (res.status !== 201) throw new Error(`config change ${n}: ${res.status} ${res.text}`);
      });
      // Keys make the list that page_size is clamped on. The first ten go through the API; the
      // rest are written through the repositories in one transaction, as another controller
      // process on this database would (a thousand POSTs took 15 to 20 s a backend and tested
      // nothing the ten do not).
      pager = await signUp(server.api, 'pager');
      const overHttp = 10;
      await inParallel(overHttp, async (n) => {
        const res = await pager.api.post('/v1/keys/', { id: keyId(n), public: ed25519PublicKey() });
        if (res.status !== 201) throw new Error(`key ${n}: ${res.status} ${res.text}`);
      });
      const { store } = server.current;
      const database = await createDatabase({ url: store.databaseUrl, dataDir: store.dataDir });
      try {
        await database.uow.transaction(async (repositories) => {
          for (let n = overHttp; n < keys; n++) {
            const created = new Date();
            await repositories.keys.create({ uuid: randomUUID(), id: keyId(n), public: ed25519PublicKey(), fingerprint: `SHA256:pager-${n}`, owner: 'pager', created, updated: created });
          }
        });
      } finally {
        await database.close();
      }
    }, 120_000);

    function linkOf(res: HttpResponse, which: 'next' | 'previous'): URL | null {
      const value = res.body[which];
      return value === null ? null : new URL(value as string);
    }

    it('pages by 100 by default with absolute next/previous URLs built from the request', async () => {
      const first = await alice.api.get(`/v1/apps/${app}/releases/`);
      const page = expectPage<ReleaseJson>(first);
      expect(page.count).toBe(total);
      expect(page.results).toHaveLength(100);
      expect(page.results[0]?.version).toBe(total);
      expect(page.previous).toBeNull();
      const next = linkOf(first, 'next');
      expect(next?.origin).toBe(new URL(server.current.url).origin);
      expect(next?.pathname).toBe(`/v1/apps/${app}/releases/`);
      expect(next?.searchParams.get('page')).toBe('2');

      const second = await alice.api.get(`${next?.pathname}${next?.search}`);
      const page2 = expectPage<ReleaseJson>(second);
      expect(page2.results.map((r) => r.version)).toEqual(Array.from({ length: total - 100 }, (_, i) => total - 100 - i));
      expect(page2.next).toBeNull();
      const previous = linkOf(second, 'previous');
      expect(previous?.pathname).toBe(`/v1/apps/${app}/releases/`);
      expect(['1', null]).toContain(previous?.searchParams.get('page'));
    });

    it('keeps the rest of the query in the links', async () => {
      const res = await alice.api.get(`/v1/apps/${app}/releases?page_size=10&page=3`);
      const page = expectPage<ReleaseJson>(res);
      expect(page.results).toHaveLength(10);
      expect(page.results[0]?.version).toBe(total - 20);
      for (const which of ['next', 'previous'] as const) {
        const link = linkOf(res, which);
        expect(link?.pathname).toBe(`/v1/apps/${app}/releases`);
        expect(link?.searchParams.get('page_size')).toBe('10');
        expect(link?.searchParams.get('page')).toBe(which === 'next' ? '4' : '2');
      }
    });

    it('answers 404 for a page past the end; page 1 of an empty list is 200', async () => {
      expectDetail(await alice.api.get(`/v1/apps/${app}/releases/?page=3`), 404);
      expect(expectPage(await alice.api.get(`/v1/apps/${app}/releases/?page=13&page_size=10`)).results).toHaveLength(10);
      expectDetail(await alice.api.get(`/v1/apps/${app}/releases/?page=14&page_size=10`), 404);
      const empty = expectPage(await alice.api.get(`/v1/apps/${app}/domains/?page=1`));
      expect(empty).toEqual({ count: 0, next: null, previous: null, results: [] });
      expectDetail(await alice.api.get(`/v1/apps/${app}/domains/?page=2`), 404);
    });

    it.each(['0', '-1', 'abc', '1.5', ''])('answers 400 on page for page=%s', async (value) => {
      expectFieldErrors(await alice.api.get(`/v1/apps/${app}/releases/?page=${value}`), ['page']);
    });

    it('from 1.6 honours page_size', async () => {
      const five = expectPage<ReleaseJson>(await alice.api.at('1.6').get(`/v1/apps/${app}/releases/?page_size=5`));
      expect(five.results.map((r) => r.version)).toEqual([total, total - 1, total - 2, total - 3, total - 4]);
      expect(expectPage(await alice.api.get(`/v1/apps/${app}/releases/?page_size=1000`)).results).toHaveLength(total);
    });

    it('clamps page_size to 1000', async () => {
      const clamped = await pager.api.get('/v1/keys/?page_size=5000');
      const page = expectPage<KeyJson>(clamped);
      expect(page.count).toBe(keys);
      expect(page.results).toHaveLength(1000);
      expect(linkOf(clamped, 'next')?.searchParams.get('page')).toBe('2');
      const rest = expectPage<KeyJson>(await pager.api.get('/v1/keys/?page_size=5000&page=2'));
      expect(rest.results.map((k) => k.id)).toEqual(['key-1000']);
      expect(expectPage(await pager.api.get('/v1/keys/?page_size=1000')).results).toHaveLength(1000);
    });

    it.each(['0', '-1', 'abc'])('from 1.6 answers 400 on page_size for page_size=%s', async (value) => {
      expectFieldErrors(await alice.api.get(`/v1/apps/${app}/releases/?page_size=${value}`), ['page_size']);
    });

    it('before 1.6 ignores page_size entirely', async () => {
      for (const value of ['5', '0', 'abc', '5000']) {
        const page = expectPage<ReleaseJson>(await alice.api.at('1.5').get(`/v1/apps/${app}/releases/?page_size=${value}`));
        expect([value, page.results.length]).toEqual([value, 100]);
      }
      expect(expectPage(await pager.api.at('1.0').get('/v1/keys/?page_size=5000')).results).toHaveLength(100);
    });

    it('paginates the other lists the same way', async () => {
      const lists = ['/v1/apps', '/v1/keys', '/v1/certs', `/v1/apps/${app}/builds`, `/v1/apps/${app}/containers`, `/v1/apps/${app}/domains`];
      for (const path of lists) {
        expectPage(await alice.api.get(`${path}/?page_size=1`));
        expectFieldErrors(await alice.api.get(`${path}/?page=0`), ['page']);
      }
    });

    it('logs: 100 lines by default, at most the log_lines asked for', async () => {
      const lines = (await alice.api.get(`/v1/apps/${app}/logs/`)).text.trimEnd().split('\n');
      expect(lines).toHaveLength(100);
      expect(lines[99]).toMatch(/svc\[api\]: alice changed N$/);
      expect((await alice.api.get(`/v1/apps/${app}/logs/?log_lines=120`)).text.trimEnd().split('\n')).toHaveLength(120);
      expect((await alice.api.get(`/v1/apps/${app}/logs/?log_lines=100000`)).text.trimEnd().split('\n')).toHaveLength(total);
    });
  });
});

describeEachBackend('SVC_API_VERSION server default', (backend) => {
  const server = useServer(backend, { SVC_API_VERSION: '1.3' });
  let admin: ApiClient;

  beforeAll(async () => {
    admin = (await signUp(server.api, 'root')).api;
    expect((await admin.post('/v1/apps/', { id: 'pinned' })).status).toBe(201);
    expect((await admin.post('/v1/apps/pinned/builds/', { image: 'example/app:1' })).status).toBe(201);
  });

  it('answers requests without a version header as 1.3', async () => {
    const res = await admin.get('/v1/apps');
    expectVersionHeaders(res, '1.3');
    expectVersionHeaders(await server.api.get('/healthz'), '1.3');
    expectVersionHeaders(await server.api.get('/v1/apps'), '1.3');
  });

  it('applies the 1.3 rules: run object, JSON-string logs, log_lines, no passwd/tokens, certs and users present', async () => {
    expect((await admin.post('/v1/apps/pinned/run/', { command: 'true' })).body).toEqual({ rc: 0, output: expect.any(String) });
    const logs = await admin.get<string>('/v1/apps/pinned/logs/?log_lines=1');
    expect(typeof logs.body).toBe('string');
    expect(logs.body.trimEnd().split('\n')).toHaveLength(1);
    expectNotFound(await admin.post('/v1/auth/passwd/', { password: 'x', new_password: 'y' }));
    expectNotFound(await admin.post('/v1/auth/tokens/'));
    expect((await admin.get('/v1/certs')).status).toBe(200);
    expect((await admin.get('/v1/users')).status).toBe(200);
    const config = await admin.post('/v1/apps/pinned/config/', { values: { A: '1' } });
    expect(config.headers.get('x-svc-release')).toBe('3');
    expect(config.headers.get('svc-release')).toBeNull();
  });

  it('still lets a request choose another version', async () => {
    const res = await admin.at('1.7').post('/v1/apps/pinned/run/', { command: 'true' });
    expect(res.body).toEqual([0, expect.any(String)]);
    expectVersionHeaders(res, '1.7');
  });

  it('answers 405 and 406 with the 1.3 headers', async () => {
    const unsupported = await admin.at('9.9').get('/v1/apps');
    expect(unsupported.status).toBe(406);
    expectVersionHeaders(unsupported, '1.3');
    const method = await admin.at('1.6').request('PUT', '/v1/apps');
    expect(method.status).toBe(405);
    expectVersionHeaders(method, '1.3');
  });
});

describeEachBackend('SVC_API_VERSION=1.0 server default', (backend) => {
  const server = useServer(backend, { SVC_API_VERSION: '1.0' });

  it('sends no version headers and 1.0 error bodies by default', async () => {
    const admin = (await signUp(server.api, 'root')).api;
    expect((await admin.post('/v1/apps/', { id: 'old' })).status).toBe(201);
    const res = await admin.post('/v1/apps/old/scale/', { web: 1 });
    expectVersionHeaders(res, '1.0');
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: 'No build associated with this release' });
    expectVersionHeaders(await admin.at('1.5').get('/v1/apps'), '1.5');
  });
});
