import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describeOnSqlite, login, signUp, unique, useServer, type ApiClient, type HttpResponse, type Session } from './support';
import { ecdsaPair, ed25519Pair } from './support/certs';
import { ed25519PublicKey } from './support/ssh-keys';

/*
 * Who may do what, endpoint by endpoint, as SPEC.md says: one table, run over HTTP at every
 * API version for five callers. The owner and administrators may delete, transfer and manage
 * collaborators; collaborators everything else and may remove themselves; strangers learn
 * nothing about an app (404 from 1.1, 403 at 1.0); keys are private to their owner;
 * certificates are visible to their owner and administrators; users, administrator
 * permissions and acting on other accounts are for administrators only. Endpoints introduced
 * by a later version answer 404 to everybody, before authentication.
 */

const ROLES = ['anonymous', 'stranger', 'collaborator', 'owner', 'admin'] as const;
type Role = (typeof ROLES)[number];
const VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7'] as const;
type Version = (typeof VERSIONS)[number];

/** An app the caller may not see: 404 from 1.1 on, 403 at 1.0. */
const H = 'hidden' as const;
type Expected = number | typeof H;
/** Statuses for anonymous, stranger, collaborator, owner, administrator. */
type Statuses = readonly [Expected, Expected, Expected, Expected, Expected];

type Method = 'GET' | 'POST' | 'DELETE';

/** What one cell sends: the path, an optional JSON body, and the app id in the path (if any). */
interface Target {
  path: string;
  body?: unknown;
  app?: string;
}

interface Row {
  method: Method;
  /** The endpoint as documented (`:app` is the shared app, `:fresh` a new app for each cell). */
  path: string;
  /** The version that introduced the endpoint; earlier versions answer 404. */
  since?: Version;
  expect: Statuses;
  /** Builds the request of one cell (creating whatever the cell consumes). */
  target: (f: Fixture, role: Role) => Promise<Target> | Target;
  /** Runs after a successful cell, e.g. to pick up a regenerated token. */
  afterward?: (f: Fixture, role: Role, res: HttpResponse<unknown>) => Promise<void>;
}

/** The users, the shared app and helpers to make fresh resources. */
interface Fixture {
  api: ApiClient;
  sessions: Record<Exclude<Role, 'anonymous'>, Session>;
  /** The current token of each role (null for anonymous). */
  tokens: Record<Role, string | null>;
  /** The shared app: owned by `owner`, `collaborator` granted, a build with `web` deployed (v2). */
  app: string;
  /** A new app owned by `owner` with `collaborator` and `helper` granted. */
  freshApp(): Promise<string>;
  /** A domain of the shared app, new for each call. */
  freshDomain(): Promise<string>;
  /** A user nobody cares about, for account operations. */
  freshUser(): Promise<string>;
  /** Makes sure the owner's key `owner-key` and certificate `ec.example.com` exist. */
  ensureOwnerKey(): Promise<void>;
  ensureOwnerCertificate(): Promise<void>;
  /** Removes the certificate `ed.example.com`, so that anyone may add it. */
  freeEdCertificate(): Promise<void>;
  /** Logs every role in again (after every token was revoked). */
  relogin(): Promise<void>;
}

const at = (version: Version, since: Version | undefined): boolean => since === undefined || Number(version.slice(2)) >= Number(since.slice(2));

const ROWS: readonly Row[] = [
  // The API root and probes.
  { method: 'GET', path: '/v1/', expect: [401, 200, 200, 200, 200], target: () => ({ path: '/v1/' }) },
  { method: 'GET', path: '/healthz', expect: [200, 200, 200, 200, 200], target: () => ({ path: '/healthz' }) },
  { method: 'GET', path: '/readyz', expect: [200, 200, 200, 200, 200], target: () => ({ path: '/readyz' }) },
  // Metrics answer whoever reaches the port unless METRICS_TOKEN is set (metrics.e2e.spec.ts); API tokens play no part.
  { method: 'GET', path: '/metrics', expect: [200, 200, 200, 200, 200], target: () => ({ path: '/metrics' }) },
  // The API's contract is public: clients read it before they have an account.
  { method: 'GET', path: '/v1/openapi.json', expect: [200, 200, 200, 200, 200], target: () => ({ path: '/v1/openapi.json' }) },
  // Where the apps and the git server are reached (an extension): any user.
  { method: 'GET', path: '/v1/platform/', expect: [401, 200, 200, 200, 200], target: () => ({ path: '/v1/platform/' }) },

  // Accounts.
  {
    method: 'POST', path: '/v1/auth/register/', expect: [201, 201, 201, 201, 201],
    target: () => ({ path: '/v1/auth/register/', body: { username: unique('reg'), password: 'Secret-1', email: 'reg@example.com' } }),
  },
  {
    method: 'POST', path: '/v1/auth/login/', expect: [200, 200, 200, 200, 200],
    target: () => ({ path: '/v1/auth/login/', body: { username: 'bob', password: 'bob-Secret1' } }),
  },
  {
    method: 'DELETE', path: '/v1/auth/cancel/ {username: other}', expect: [401, 403, 403, 403, 204],
    target: async (f, role) => ({ path: '/v1/auth/cancel/', body: { username: await f.freshUser(), password: passwordOf(f, role) } }),
  },
  {
    method: 'POST', path: '/v1/auth/passwd/ (own)', since: '1.4', expect: [401, 200, 200, 200, 200],
    target: (f, role) => ({ path: '/v1/auth/passwd/', body: { password: passwordOf(f, role), new_password: passwordOf(f, role) } }),
  },
  {
    method: 'POST', path: '/v1/auth/passwd/ {username: other}', since: '1.4', expect: [401, 403, 403, 403, 200],
    target: (f, role) => ({ path: '/v1/auth/passwd/', body: { username: 'carol', password: passwordOf(f, role), new_password: unique('Pw') } }),
  },
  {
    method: 'POST', path: '/v1/auth/tokens/ (own)', since: '1.5', expect: [401, 200, 200, 200, 200],
    target: () => ({ path: '/v1/auth/tokens/' }),
    afterward: async (f, role, res) => {
      f.tokens[role] = (res.body as { token: string }).token;
    },
  },
  {
    method: 'POST', path: '/v1/auth/tokens/ {username: other}', since: '1.5', expect: [401, 403, 403, 403, 200],
    target: () => ({ path: '/v1/auth/tokens/', body: { username: 'dave' } }),
  },
  {
    method: 'POST', path: '/v1/auth/tokens/ {all: true}', since: '1.5', expect: [401, 403, 403, 403, 200],
    target: () => ({ path: '/v1/auth/tokens/', body: { all: 'true' } }),
    afterward: (f) => f.relogin(),
  },
  { method: 'GET', path: '/v1/users/', since: '1.3', expect: [401, 403, 403, 403, 200], target: () => ({ path: '/v1/users/' }) },
  { method: 'GET', path: '/v1/admin/perms/', expect: [401, 403, 403, 403, 200], target: () => ({ path: '/v1/admin/perms/' }) },
  {
    method: 'POST', path: '/v1/admin/perms/', expect: [401, 403, 403, 403, 201],
    target: () => ({ path: '/v1/admin/perms/', body: { username: 'bob' } }),
  },
  { method: 'DELETE', path: '/v1/admin/perms/<user>', expect: [401, 403, 403, 403, 204], target: () => ({ path: '/v1/admin/perms/bob' }) },

  // Applications.
  { method: 'GET', path: '/v1/apps', expect: [401, 200, 200, 200, 200], target: () => ({ path: '/v1/apps' }) },
  { method: 'POST', path: '/v1/apps/', expect: [401, 201, 201, 201, 201], target: () => ({ path: '/v1/apps/', body: { id: unique('made') } }) },
  { method: 'GET', path: '/v1/apps/:app/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, '') },
  {
    method: 'POST', path: '/v1/apps/:app/ {owner: same}', since: '1.7', expect: [401, H, 403, 200, 200],
    target: (f) => appTarget(f.app, '', { owner: 'owner' }),
  },
  {
    method: 'POST', path: '/v1/apps/:fresh/ {owner: other}', since: '1.7', expect: [401, H, 403, 200, 200],
    target: async (f) => appTarget(await f.freshApp(), '', { owner: 'bob' }),
  },
  { method: 'DELETE', path: '/v1/apps/:fresh/', expect: [401, H, 403, 204, 204], target: async (f) => appTarget(await f.freshApp(), '') },
  { method: 'GET', path: '/v1/apps/:app/logs/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'logs/') },
  { method: 'POST', path: '/v1/apps/:app/run/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'run/', { command: 'ls' }) },

  // Containers.
  { method: 'GET', path: '/v1/apps/:app/containers/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'containers/') },
  { method: 'GET', path: '/v1/apps/:app/containers/web/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'containers/web/') },
  { method: 'POST', path: '/v1/apps/:app/scale/', expect: [401, H, 204, 204, 204], target: (f) => appTarget(f.app, 'scale/', { web: 1 }) },
  {
    method: 'POST', path: '/v1/apps/:app/containers/restart/', since: '1.3', expect: [401, H, 200, 200, 200],
    target: (f) => appTarget(f.app, 'containers/restart/'),
  },
  {
    method: 'POST', path: '/v1/apps/:app/containers/web/restart/', since: '1.3', expect: [401, H, 200, 200, 200],
    target: (f) => appTarget(f.app, 'containers/web/restart/'),
  },
  {
    method: 'POST', path: '/v1/apps/:app/containers/web/1/restart/', since: '1.3', expect: [401, H, 200, 200, 200],
    target: (f) => appTarget(f.app, 'containers/web/1/restart/'),
  },

  // Config, builds, releases.
  { method: 'GET', path: '/v1/apps/:app/config/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'config/') },
  {
    method: 'POST', path: '/v1/apps/:app/config/', expect: [401, H, 201, 201, 201],
    target: (f) => appTarget(f.app, 'config/', { values: { MATRIX: unique('v') } }),
  },
  { method: 'GET', path: '/v1/apps/:app/builds/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'builds/') },
  {
    method: 'POST', path: '/v1/apps/:app/builds/', expect: [401, H, 201, 201, 201],
    target: (f) => appTarget(f.app, 'builds/', { image: 'example/web:2', procfile: { web: 'serve' } }),
  },
  { method: 'GET', path: '/v1/apps/:app/releases/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'releases/') },
  { method: 'GET', path: '/v1/apps/:app/releases/v2/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'releases/v2/') },
  {
    method: 'POST', path: '/v1/apps/:app/releases/rollback/', expect: [401, H, 201, 201, 201],
    target: (f) => appTarget(f.app, 'releases/rollback/', { version: 2 }),
  },

  // Domains.
  { method: 'GET', path: '/v1/apps/:app/domains/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'domains/') },
  // Extension (automatic HTTPS): whoever may manage the app's domains sees and sets its TLS.
  { method: 'GET', path: '/v1/apps/:app/tls/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'tls/') },
  { method: 'POST', path: '/v1/apps/:app/tls/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'tls/', { https_redirect: false }) },
  {
    method: 'POST', path: '/v1/apps/:app/domains/', expect: [401, H, 201, 201, 201],
    target: (f) => appTarget(f.app, 'domains/', { domain: `${unique('d')}.example.com` }),
  },
  {
    method: 'DELETE', path: '/v1/apps/:app/domains/<domain>', expect: [401, H, 204, 204, 204],
    target: async (f) => appTarget(f.app, `domains/${await f.freshDomain()}`),
  },

  // Permissions of an app.
  { method: 'GET', path: '/v1/apps/:app/perms/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'perms/') },
  {
    method: 'POST', path: '/v1/apps/:app/perms/', expect: [401, H, 403, 201, 201],
    target: (f) => appTarget(f.app, 'perms/', { username: 'helper' }),
  },
  {
    method: 'DELETE', path: '/v1/apps/:fresh/perms/<collaborator> (the collaborator themself)', expect: [401, H, 204, 204, 204],
    target: async (f) => appTarget(await f.freshApp(), 'perms/collaborator'),
  },
  {
    method: 'POST', path: '/v1/apps/:fresh/perms/<collaborator> (the collaborator themself)', expect: [401, H, 204, 204, 204],
    target: async (f) => appTarget(await f.freshApp(), 'perms/collaborator'),
  },
  {
    method: 'DELETE', path: '/v1/apps/:fresh/perms/<another collaborator>', expect: [401, H, 403, 204, 204],
    target: async (f) => appTarget(await f.freshApp(), 'perms/helper'),
  },

  // Keys: private to their owner, administrators included.
  { method: 'GET', path: '/v1/keys/', expect: [401, 200, 200, 200, 200], target: () => ({ path: '/v1/keys/' }) },
  {
    method: 'POST', path: '/v1/keys/', expect: [401, 201, 201, 201, 201],
    target: () => ({ path: '/v1/keys/', body: { id: unique('key'), public: ed25519PublicKey() } }),
  },
  {
    method: 'DELETE', path: "/v1/keys/<the owner's key>", expect: [401, 404, 404, 204, 404],
    target: async (f) => {
      await f.ensureOwnerKey();
      return { path: '/v1/keys/owner-key' };
    },
  },

  // Certificates: visible to their owner and administrators; accepted only for names of apps
  // the caller may manage (ed.example.com is a domain of the app: not the stranger's).
  { method: 'GET', path: '/v1/certs', since: '1.2', expect: [401, 200, 200, 200, 200], target: () => ({ path: '/v1/certs' }) },
  {
    method: 'POST', path: '/v1/certs/', since: '1.2', expect: [401, 403, 201, 201, 201],
    target: async (f) => {
      await f.freeEdCertificate();
      return { path: '/v1/certs/', body: ed25519Pair() };
    },
  },
  {
    method: 'GET', path: "/v1/certs/<the owner's certificate>", since: '1.2', expect: [401, 404, 404, 200, 200],
    target: async (f) => {
      await f.ensureOwnerCertificate();
      return { path: '/v1/certs/ec.example.com' };
    },
  },
  {
    method: 'DELETE', path: "/v1/certs/<the owner's certificate>", since: '1.2', expect: [401, 404, 404, 204, 204],
    target: async (f) => {
      await f.ensureOwnerCertificate();
      return { path: '/v1/certs/ec.example.com' };
    },
  },

  // Extensions (every version): the audit journal, the event stream and webhooks; who may see an app manages its webhooks.
  { method: 'GET', path: '/v1/events/', expect: [401, 200, 200, 200, 200], target: () => ({ path: '/v1/events/' }) },
  { method: 'GET', path: '/v1/apps/:app/events/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'events/') },
  { method: 'GET', path: '/v1/apps/:app/webhooks/', expect: [401, H, 200, 200, 200], target: (f) => appTarget(f.app, 'webhooks/') },
  {
    method: 'POST', path: '/v1/apps/:fresh/webhooks/', expect: [401, H, 201, 201, 201],
    target: async (f) => appTarget(await f.freshApp(), 'webhooks/', WEBHOOK),
  },
  {
    method: 'GET', path: '/v1/apps/:fresh/webhooks/<webhook>', expect: [401, H, 200, 200, 200],
    target: async (f) => webhookTarget(f, ''),
  },
  {
    method: 'GET', path: '/v1/apps/:fresh/webhooks/<webhook>/deliveries/', expect: [401, H, 200, 200, 200],
    target: async (f) => webhookTarget(f, 'deliveries/'),
  },
  {
    method: 'DELETE', path: '/v1/apps/:fresh/webhooks/<webhook>', expect: [401, H, 204, 204, 204],
    target: async (f) => webhookTarget(f, ''),
  },
];

/** A webhook that never reaches the network: 127.0.0.1 is refused without WEBHOOK_ALLOWED_HOSTS. */
const WEBHOOK = { url: 'http://127.0.0.1:9/hook', events: ['perm'] };

/** A webhook of a fresh app, made by its owner. */
async function webhookTarget(f: Fixture, rest: string): Promise<Target> {
  const app = await f.freshApp();
  const created = await f.api.as(f.tokens.owner).post<{ uuid: string }>(`/v1/apps/${app}/webhooks/`, WEBHOOK);
  return appTarget(app, `webhooks/${created.body.uuid}/${rest}`);
}

/** The Express route a row's path belongs to, e.g. `/v1/apps/:id/containers/:type`. */
function routeOf(path: string): string {
  return (path.replace(/<[^>]*>/g, '<x>').split(' ')[0] as string)
    .replace(/\/$/, '')
    .replace(/:app|:fresh/, ':id')
    .replace(/\/containers\/web\/1\/restart$/, '/containers/:type/:num/restart')
    .replace(/\/containers\/web(\/restart)?$/, '/containers/:type$1')
    .replace(/\/releases\/v2$/, '/releases/v:version')
    .replace(/\/domains\/<[^>]+>$/, '/domains/:domain')
    .replace(/\/perms\/<[^>]+>$/, '/perms/:username')
    .replace(/^\/v1\/keys\/<[^>]+>$/, '/v1/keys/:id')
    .replace(/^\/v1\/certs\/<[^>]+>$/, '/v1/certs/:common_name')
    .replace(/\/webhooks\/<[^>]+>(\/deliveries)?$/, '/webhooks/:uuid$1');
}

/** Every `METHOD path` the HTTP adapter's route modules declare, read from their source. */
function declaredRoutes(): string[] {
  const dir = join(__dirname, '..', '..', 'http-express', 'src', 'routes');
  const routes: string[] = [];
  for (const file of readdirSync(dir)) {
    const source = readFileSync(join(dir, file), 'utf8');
    for (const match of source.matchAll(/(?:authed|open|openWithCaller)\(\s*'(get|post|delete)',\s*'([^']+)'/g)) {
      routes.push(`${(match[1] as string).toUpperCase()} ${match[2] as string}`);
    }
    // The seed's revoke by POST reuses the DELETE route with another method.
    if (source.includes("{ ...revokePermission, method: 'post' }")) routes.push('POST /v1/apps/:id/perms/:username');
  }
  expect(routes.length).toBeGreaterThan(40);
  return routes;
}

function appTarget(app: string, rest: string, body?: unknown): Target {
  return { path: `/v1/apps/${app}/${rest}`, body, app };
}

function passwordOf(f: Fixture, role: Role): string {
  return role === 'anonymous' ? 'irrelevant' : f.sessions[role].password;
}

/** The status a row promises a role at a version. */
function expectedStatus(row: Row, role: Role, version: Version): number {
  if (!at(version, row.since)) return 404;
  const value = row.expect[ROLES.indexOf(role)] as Expected;
  if (value !== H) return value;
  return version === '1.0' ? 403 : 404;
}

function ok(res: HttpResponse<unknown>, what: string, ...statuses: number[]): void {
  if (!statuses.includes(res.status)) throw new Error(`${what}: ${res.status} ${res.text}`);
}

describeOnSqlite('authorization matrix', 'the permission table is in core; the repositories it reads in postgres.int, tenants.e2e and apps.e2e', (backend) => {
  // Every row at every version gets fresh apps of the owner: far more than the default quota.
  const server = useServer(backend, { SCHEDULER: 'memory', QUOTA_APPS_PER_USER: '100000' });
  let f: Fixture;

  beforeAll(async () => {
    const api = server.api;
    // The first user registered becomes the administrator.
    const admin = await signUp(api, 'root');
    const owner = await signUp(api, 'owner');
    const collaborator = await signUp(api, 'collaborator');
    const stranger = await signUp(api, 'stranger');
    for (const name of ['bob', 'carol', 'dave', 'helper']) await signUp(api, name);
    const sessions = { stranger, collaborator, owner, admin };
    const tokens: Record<Role, string | null> = { anonymous: null, stranger: stranger.token, collaborator: collaborator.token, owner: owner.token, admin: admin.token };
    const as = (role: Exclude<Role, 'anonymous'>): ApiClient => api.as(tokens[role]);

    const freshApp = async (): Promise<string> => {
      const id = unique('fresh');
      ok(await as('owner').post('/v1/apps/', { id }), 'create app', 201);
      for (const username of ['collaborator', 'helper']) ok(await as('owner').post(`/v1/apps/${id}/perms/`, { username }), 'grant', 201);
      return id;
    };
    const app = await freshApp();
    ok(await as('owner').post(`/v1/apps/${app}/builds/`, { image: 'example/web:1', procfile: { web: 'serve' } }), 'deploy', 201);
    // The names of the certificates the rows upload.
    for (const domain of ['ec.example.com', 'www.ec.example.com', 'ed.example.com']) {
      ok(await as('owner').post(`/v1/apps/${app}/domains/`, { domain }), 'add domain', 201);
    }

    f = {
      api,
      sessions,
      tokens,
      app,
      freshApp,
      freshDomain: async () => {
        const domain = `${unique('gone')}.example.com`;
        ok(await as('owner').post(`/v1/apps/${app}/domains/`, { domain }), 'add domain', 201);
        return domain;
      },
      freshUser: async () => {
        const username = unique('leaving');
        ok(await api.post('/v1/auth/register/', { username, password: 'Secret-1', email: 'x@example.com' }, { token: null }), 'register', 201);
        return username;
      },
      ensureOwnerKey: async () => {
        // Keys have no detail endpoint: look the key up in the owner's list.
        const list = await as('owner').get<{ results: Array<{ id: string }> }>('/v1/keys/?page_size=1000');
        if (!list.body.results.some((k) => k.id === 'owner-key')) {
          ok(await as('owner').post('/v1/keys/', { id: 'owner-key', public: ed25519PublicKey() }), 'add key', 201);
        }
      },
      ensureOwnerCertificate: async () => {
        const res = await as('owner').get('/v1/certs/ec.example.com', { version: '1.7' });
        if (res.status === 404) ok(await as('owner').post('/v1/certs/', ecdsaPair(), { version: '1.7' }), 'add certificate', 201);
      },
      freeEdCertificate: async () => {
        ok(await as('admin').delete('/v1/certs/ed.example.com', { version: '1.7' }), 'remove certificate', 204, 404);
      },
      relogin: async () => {
        for (const role of ['stranger', 'collaborator', 'owner', 'admin'] as const) {
          tokens[role] = await login(api, sessions[role].username, sessions[role].password);
        }
      },
    };
  });

  it('has a row for every route of the HTTP adapter', () => {
    const covered = new Set(ROWS.map((row) => `${row.method} ${routeOf(row.path)}`));
    const missing = declaredRoutes().filter((route) => !covered.has(route));
    expect(missing).toEqual([]);
  });

  it.each(VERSIONS)('every endpoint answers every role as SPEC.md allows at %s', async (version) => {
    const actual: Record<string, number> = {};
    const expected: Record<string, number> = {};
    const leaks: string[] = [];
    for (const row of ROWS) {
      for (const role of ROLES) {
        const key = `${row.method} ${row.path} as ${role}`;
        expected[key] = expectedStatus(row, role, version);
        const target = await row.target(f, role);
        const client = f.api.as(f.tokens[role]).at(version);
        const res = await client.request(row.method, target.path, target.body === undefined ? {} : { json: target.body });
        actual[key] = res.status;
        if (res.status < 300 && row.afterward !== undefined) await row.afterward(f, role, res);
        if (role === 'stranger' && target.app !== undefined && version !== '1.0') {
          // A stranger's answer about an existing app is the answer about an app that does not exist.
          const absent = await client.request(row.method, target.path.replace(target.app, 'no-such-app'), target.body === undefined ? {} : { json: target.body });
          if (absent.status !== res.status || absent.text !== res.text) leaks.push(`${key}: ${res.status} ${res.text} vs ${absent.status} ${absent.text}`);
        }
      }
    }
    expect(actual).toEqual(expected);
    expect(leaks).toEqual([]);
  });

  it("a stranger's app list never names an app they may not see; a collaborator's does", async () => {
    const list = async (role: 'stranger' | 'collaborator') =>
      (await f.api.as(f.tokens[role]).get<{ results: Array<{ id: string }> }>('/v1/apps?page_size=1000')).body.results.map((a) => a.id);
    expect(await list('stranger')).not.toContain(f.app);
    expect(await list('collaborator')).toContain(f.app);
  });
});
