import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { E2E_TIMEOUT_MS, login, signUp, startTestServer, type ApiClient, type HttpResponse, type RequestOptions, type Session, type TestServer } from './support';
import { SqliteReader } from './support/sqlite-snapshot';

/*
 * Property-based fuzzing of every endpoint: bodies (well-shaped and not), query strings and
 * path parameters drawn at random, at random API versions. Whatever is sent, the server
 * never answers 5xx, an error body is JSON, and a 4xx leaves every row of the database as
 * it was. Seeded, so a failure replays; bounded, so the file runs in well under a minute.
 */

const SEED = 20261121;
const APP = 'fuzz-app';
const VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7'];
/** Failed logins are recorded on purpose (throttling), so a 4xx of login may add a row there. */
const WRITTEN_BY_FAILURES = ['login_failures'];
/** And a failed login is an event of the audit journal (`user.login_failed`): only login's 4xx may add one. */
const WRITTEN_BY_FAILED_LOGINS = [...WRITTEN_BY_FAILURES, 'events'];

type Method = 'GET' | 'POST' | 'DELETE';
type Caller = 'alice' | 'admin' | 'mallory' | 'anonymous';

/** What one fuzzed request carries besides method and path. */
type Payload =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'raw'; text: string; contentType: string | undefined }
  | { kind: 'form'; fields: Record<string, string> };

interface Target {
  name: string;
  method: Method;
  path: fc.Arbitrary<string>;
  /** The body shapes that reach the use case; random JSON, raw text and forms are added. */
  shaped?: fc.Arbitrary<unknown>;
  query?: boolean;
  caller: Caller;
  runs?: number;
}

// Values of every JSON type, and strings from every corner of Unicode.
const anyString = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('', ' ', 'null', '0', '-1', '1e999', '\u0000', '../..', '%00', 'SVC_APP', 'web'));
const anyValue: fc.Arbitrary<unknown> = fc.oneof(anyString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
const dict = (key: fc.Arbitrary<string>, value: fc.Arbitrary<unknown>) => fc.dictionary(key, value, { maxKeys: 4 });
const processType = fc.oneof(fc.constantFrom('web', 'worker', 'cmd', 'run', '__proto__', 'constructor'), anyString);

/** A path segment: usually a plausible value, sometimes anything (encoded), sometimes broken encoding. */
const segment = (...plausible: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...plausible) },
    { weight: 3, arbitrary: anyString.map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%', '%E0%A4%A', '%2e%2e', '..', '%2F', 'a%00b', 'x'.repeat(300)) },
  );
const appId = segment(APP, 'no-such-app', 'FUZZ-APP');
const appPath = (rest: string) => appId.map((id) => `/v1/apps/${id}/${rest}`);

const pageQuery = fc.dictionary(
  fc.constantFrom('page', 'page_size', 'log_lines', 'x', 'page[]'),
  fc.oneof(fc.constantFrom('0', '1', '2', '-1', 'abc', '1000', '1001', '99999999999999999999', '1.5', ''), anyString),
  { maxKeys: 3 },
);

const TARGETS: Target[] = [
  { name: 'register', method: 'POST', path: fc.constant('/v1/auth/register/'), caller: 'anonymous', runs: 12,
    shaped: fc.record({ username: anyString, password: anyString, email: fc.oneof(fc.emailAddress(), anyString), first_name: anyString, is_superuser: anyValue }, { requiredKeys: [] }) },
  { name: 'login', method: 'POST', path: fc.constant('/v1/auth/login/'), caller: 'anonymous',
    runs: 10,
    shaped: fc.record({ username: fc.oneof(fc.constant('alice'), anyString), password: fc.oneof(anyString, anyValue) }) },
  { name: 'cancel', method: 'DELETE', path: fc.constant('/v1/auth/cancel/'), caller: 'mallory',
    shaped: fc.record({ username: fc.oneof(fc.constantFrom('alice', 'root', 'nobody'), anyString), password: anyValue }, { requiredKeys: [] }) },
  { name: 'passwd', method: 'POST', path: fc.constant('/v1/auth/passwd/'), caller: 'mallory',
    shaped: fc.record({ username: fc.oneof(fc.constantFrom('alice', 'nobody'), anyString), password: anyValue, new_password: anyValue }, { requiredKeys: [] }) },
  { name: 'tokens', method: 'POST', path: fc.constant('/v1/auth/tokens/'), caller: 'mallory',
    shaped: fc.record({ username: fc.oneof(fc.constantFrom('alice', 'nobody'), anyString), all: anyValue }, { requiredKeys: ['username'] }) },
  { name: 'users', method: 'GET', path: fc.constant('/v1/users/'), caller: 'admin', query: true },
  { name: 'admin perms list', method: 'GET', path: fc.constant('/v1/admin/perms/'), caller: 'admin', query: true },
  { name: 'admin perms grant', method: 'POST', path: fc.constant('/v1/admin/perms/'), caller: 'alice',
    shaped: fc.record({ username: fc.oneof(fc.constant('alice'), anyString) }, { requiredKeys: [] }) },
  { name: 'admin perms revoke', method: 'DELETE', path: segment('nobody', 'alice').map((u) => `/v1/admin/perms/${u}`), caller: 'admin' },
  { name: 'apps list', method: 'GET', path: fc.constant('/v1/apps'), caller: 'alice', query: true },
  { name: 'apps create', method: 'POST', path: fc.constant('/v1/apps/'), caller: 'alice',
    shaped: fc.record({ id: fc.oneof(fc.constantFrom(APP, 'svc', 'api', 'a'.repeat(64), 'ok-name'), anyString, anyValue) }, { requiredKeys: [] }) },
  { name: 'app detail', method: 'GET', path: appPath(''), caller: 'alice' },
  { name: 'app transfer', method: 'POST', path: appPath(''), caller: 'alice',
    shaped: fc.record({ owner: fc.oneof(fc.constantFrom('nobody', 'alice'), anyValue) }, { requiredKeys: [] }) },
  { name: 'app delete', method: 'DELETE', path: segment('no-such-app', 'FUZZ-APP').map((id) => `/v1/apps/${id}/`), caller: 'mallory' },
  { name: 'logs', method: 'GET', path: appPath('logs/'), caller: 'alice', query: true },
  { name: 'run', method: 'POST', path: appPath('run/'), caller: 'alice', shaped: fc.record({ command: anyValue }, { requiredKeys: [] }) },
  { name: 'containers', method: 'GET', path: appPath('containers/'), caller: 'alice', query: true },
  { name: 'containers by type', method: 'GET', path: fc.tuple(appId, segment('web', 'worker')).map(([a, t]) => `/v1/apps/${a}/containers/${t}/`), caller: 'alice', query: true },
  { name: 'scale', method: 'POST', path: appPath('scale/'), caller: 'alice', runs: 14,
    shaped: dict(processType, fc.oneof(fc.integer({ min: -5, max: 200 }), fc.constantFrom('1', '01', '1.0', '', '1e2', 'NaN'), anyValue)) },
  { name: 'restart', method: 'POST', path: fc.tuple(appId, segment('web', 'worker'), segment('1', '2', '0', '999999999999')).map(([a, t, n]) => `/v1/apps/${a}/containers/${t}/${n}/restart/`), caller: 'alice' },
  { name: 'config get', method: 'GET', path: appPath('config/'), caller: 'alice' },
  { name: 'config set', method: 'POST', path: appPath('config/'), caller: 'alice', runs: 16,
    shaped: fc.record(
      {
        values: dict(fc.oneof(fc.constantFrom('FOO', 'SVC_APP', 'SVC_RELEASE', '1BAD', '__proto__'), anyString), anyValue),
        memory: dict(processType, fc.oneof(fc.constantFrom('512M', '1G', '0B', '5X', ''), anyValue)),
        cpu: dict(processType, fc.oneof(fc.integer({ min: -10, max: 2000 }), fc.constantFrom('512', 'x'), anyValue)),
        tags: dict(fc.oneof(fc.constant('zone'), anyString), anyValue),
      },
      { requiredKeys: [] },
    ) },
  { name: 'builds list', method: 'GET', path: appPath('builds/'), caller: 'alice', query: true },
  { name: 'builds create', method: 'POST', path: appPath('builds/'), caller: 'alice', runs: 14,
    shaped: fc.record({ image: fc.oneof(fc.constant('example/app:v1'), anyString, anyValue), procfile: fc.oneof(dict(processType, anyValue), anyValue), sha: fc.oneof(fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), maxLength: 45 }), anyValue), dockerfile: anyValue }, { requiredKeys: [] }) },
  { name: 'releases list', method: 'GET', path: appPath('releases/'), caller: 'alice', query: true },
  { name: 'release detail', method: 'GET', path: fc.tuple(appId, segment('1', '2', '0', '99999999999', '-1', '1.5')).map(([a, v]) => `/v1/apps/${a}/releases/v${v}/`), caller: 'alice' },
  { name: 'rollback', method: 'POST', path: appPath('releases/rollback/'), caller: 'alice',
    shaped: fc.record({ version: fc.oneof(fc.integer({ min: -3, max: 1e12 }), fc.constantFrom('1', '1.5', 2 ** 53, 1e308), anyValue) }, { requiredKeys: [] }) },
  { name: 'domains list', method: 'GET', path: appPath('domains/'), caller: 'alice', query: true },
  { name: 'domains add', method: 'POST', path: appPath('domains/'), caller: 'alice',
    shaped: fc.record({ domain: fc.oneof(fc.domain(), fc.constantFrom('*.example.com', 'x.localhost', 'localhost', '1.2.3.4', 'a..b', `${'a'.repeat(64)}.com`), anyValue) }, { requiredKeys: [] }) },
  { name: 'domains remove', method: 'DELETE', path: fc.tuple(appId, segment('nothing.example.com', 'EXAMPLE.com.')).map(([a, d]) => `/v1/apps/${a}/domains/${d}`), caller: 'alice' },
  { name: 'perms list', method: 'GET', path: appPath('perms/'), caller: 'alice' },
  { name: 'perms grant', method: 'POST', path: appPath('perms/'), caller: 'alice',
    shaped: fc.record({ username: fc.oneof(fc.constantFrom('alice', 'nobody'), anyValue) }, { requiredKeys: [] }) },
  { name: 'perms revoke', method: 'DELETE', path: fc.tuple(appId, segment('nobody', 'alice')).map(([a, u]) => `/v1/apps/${a}/perms/${u}`), caller: 'alice' },
  { name: 'perms revoke (POST)', method: 'POST', path: fc.tuple(appId, segment('nobody', 'alice')).map(([a, u]) => `/v1/apps/${a}/perms/${u}`), caller: 'alice' },
  { name: 'keys list', method: 'GET', path: fc.constant('/v1/keys/'), caller: 'alice', query: true },
  { name: 'keys add', method: 'POST', path: fc.constant('/v1/keys/'), caller: 'alice',
    shaped: fc.record({ id: anyValue, public: fc.oneof(fc.constantFrom('ssh-ed25519 AAAA', 'ssh-rsa AAAAB3NzaC1yc2E= x', 'ssh-dss AAAA'), anyString, anyValue) }, { requiredKeys: [] }) },
  { name: 'keys remove', method: 'DELETE', path: segment('nothing', 'a/b').map((k) => `/v1/keys/${k}`), caller: 'alice' },
  { name: 'certs list', method: 'GET', path: fc.constant('/v1/certs'), caller: 'alice', query: true },
  { name: 'certs add', method: 'POST', path: fc.constant('/v1/certs/'), caller: 'alice',
    shaped: fc.record({ certificate: fc.oneof(fc.constant('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'), anyValue), key: anyValue, common_name: anyValue }, { requiredKeys: [] }) },
  { name: 'cert detail', method: 'GET', path: segment('nothing.example.com').map((c) => `/v1/certs/${c}`), caller: 'alice' },
  { name: 'cert remove', method: 'DELETE', path: segment('nothing.example.com').map((c) => `/v1/certs/${c}`), caller: 'alice' },
  { name: 'api root', method: 'GET', path: fc.constant('/v1/'), caller: 'alice' },
  { name: 'unknown paths', method: 'GET', path: fc.oneof(anyString.map((s) => `/v1/${encodeURIComponent(s)}`), fc.constantFrom('/v1//apps', '/V1/apps', '/v1/apps/x/y/z/w', '/%')), caller: 'alice' },
];

/** Every way a body can arrive: the endpoint's own shape, any JSON, raw text under any type, a form. */
function payloads(target: Target): fc.Arbitrary<Payload> {
  if (target.method === 'GET') return fc.constant({ kind: 'none' });
  const options: Array<fc.WeightedArbitrary<Payload>> = [
    { weight: 1, arbitrary: fc.constant({ kind: 'none' }) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => ({ kind: 'json', value })) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('raw' as const),
        text: fc.oneof(anyString, fc.constantFrom('{', '{"a":', '[1,', '"\\u0000"', '{"values":{"A":"\\u0000"}}', '\ufeff{}', '  ')),
        contentType: fc.constantFrom(undefined, 'application/json', 'application/json; charset=latin1', 'application/vnd.api+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'),
      }),
    },
    { weight: 1, arbitrary: dict(fc.oneof(fc.constantFrom('id', 'username', 'values', 'command', 'version'), anyString), anyString).map((fields) => ({ kind: 'form', fields: fields as Record<string, string> })) },
  ];
  if (target.shaped !== undefined) options.push({ weight: 5, arbitrary: target.shaped.map((value) => ({ kind: 'json', value })) });
  return fc.oneof(...options);
}

function requestOptions(payload: Payload, version: string | null): RequestOptions {
  const base: RequestOptions = { version };
  switch (payload.kind) {
    case 'none':
      return base;
    case 'json':
      return { ...base, json: payload.value };
    case 'raw':
      return { ...base, raw: payload.text, ...(payload.contentType === undefined ? {} : { contentType: payload.contentType }) };
    case 'form':
      return { ...base, form: payload.fields };
  }
}

const query = fc.option(pageQuery.map((params) => `?${new URLSearchParams(params).toString()}`), { nil: '' });

describe('fuzzing every endpoint', () => {
  jest.setTimeout(E2E_TIMEOUT_MS * 2);
  let dataDir: string;
  let server: TestServer;
  let reader: SqliteReader;
  let sessions: Record<Exclude<Caller, 'anonymous'>, Session>;
  const findings: string[] = [];
  let requests = 0;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-fuzz-'));
    server = await startTestServer({ dataDir }, { SCHEDULER: 'memory' });
    const admin = await signUp(server.api, 'root');
    const alice = await signUp(server.api, 'alice');
    const mallory = await signUp(server.api, 'mallory');
    sessions = { admin, alice, mallory };
    const ok = (res: HttpResponse<unknown>, status: number) => expect([res.status, res.text]).toEqual([status, expect.any(String)]);
    ok(await alice.api.post('/v1/apps/', { id: APP }), 201);
    ok(await alice.api.post(`/v1/apps/${APP}/builds/`, { image: 'example/app:v1', procfile: { web: 'serve', worker: 'work' } }), 201);
    ok(await alice.api.post(`/v1/apps/${APP}/scale/`, { web: 2, worker: 1 }), 204);
    ok(await alice.api.post(`/v1/apps/${APP}/domains/`, { domain: 'fuzz.example.com' }), 201);
    // Mallory owns an app, so that cancelling her own account is refused (409) and she stays.
    ok(await mallory.api.post('/v1/apps/', { id: 'mallory-app' }), 201);
    reader = new SqliteReader(dataDir);
  });

  afterAll(async () => {
    reader?.close();
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** Sends one fuzzed request and checks the properties; returns a finding or null. */
  async function probe(target: Target, path: string, payload: Payload, version: string | null): Promise<string | null> {
    const caller = target.caller;
    const client: ApiClient = caller === 'anonymous' ? server.api.as(null) : server.api.as(sessions[caller].token);
    const skipped = target.name === 'login' ? WRITTEN_BY_FAILED_LOGINS : WRITTEN_BY_FAILURES;
    const before = reader.snapshot(skipped);
    let res: HttpResponse<unknown>;
    try {
      res = await client.request(target.method, path, requestOptions(payload, version));
    } catch (error) {
      // The client refused to send it (e.g. a URL fetch cannot express): not the server's doing.
      if (error instanceof TypeError) return null;
      throw error;
    }
    requests += 1;
    const sent = `${target.method} ${path} @${version ?? 'default'} ${JSON.stringify(payload).slice(0, 300)}`;
    if (res.status >= 500) return `${res.status} for ${sent}: ${res.text.slice(0, 200)}`;
    if (res.status >= 400 && !/json/.test(res.contentType)) return `non-JSON ${res.status} for ${sent}: ${res.contentType}`;
    if (res.status >= 400) {
      const after = reader.snapshot(skipped);
      const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
      if (changed.length > 0) return `${res.status} changed ${changed.join(', ')} for ${sent}`;
    }
    if (caller === 'mallory' && res.status === 200 && target.name === 'tokens') {
      // Her tokens were revoked and a new one returned: keep fuzzing as her.
      sessions.mallory = { ...sessions.mallory, token: (res.body as { token: string }).token };
    }
    if (caller === 'mallory' && res.status === 200 && target.name === 'passwd') {
      sessions.mallory = { ...sessions.mallory, token: await login(server.api, 'mallory', sessions.mallory.password) };
    }
    return null;
  }

  it.each(TARGETS.map((target) => [target.name, target] as const))('%s: never 5xx, errors are JSON, a 4xx changes nothing', async (_name, target) => {
    await fc.assert(
      fc.asyncProperty(target.path, target.query === true ? query : fc.constant(''), payloads(target), fc.option(fc.constantFrom(...VERSIONS), { nil: null }), async (path, search, payload, version) => {
        const finding = await probe(target, `${path}${search}`, payload, version);
        if (finding !== null) findings.push(finding);
        return finding === null;
      }),
      { seed: SEED, numRuns: target.runs ?? 8, endOnFailure: true },
    );
  });

  it('sent a few hundred requests and found nothing', () => {
    expect(findings).toEqual([]);
    expect(requests).toBeGreaterThan(300);
  });
});
