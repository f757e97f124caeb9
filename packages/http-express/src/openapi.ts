import { API_VERSIONS, LATEST_API_VERSION, policyFor, type ApiVersion, type VersionedFeature } from '@svc/core';
import { DOMAIN_OPERATIONS, DOMAIN_SCHEMAS } from './openapi-domains';
import { EVENT_OPERATIONS, EVENT_SCHEMAS, EXTENSIONS_DESCRIPTION } from './openapi-events';
import { PLATFORM_OPERATIONS, PLATFORM_SCHEMAS } from './openapi-platform';
import { ISO, STRING_MAP, TIMESTAMP, list, object, props, ref, type Operation, type Schema } from './openapi-schema';
import type { Route } from './routing';

/*
 * The OpenAPI 3.1 document of the API as built. Its paths come from the route table itself
 * (`openApiDocument(routes)`), and every route must have an entry in OPERATIONS below and
 * every entry a route: building the document throws otherwise, so the document cannot drift
 * from the code (a unit test builds it from the application's routes). Per-version
 * differences are written in `description`s and in the `x-svc-since` / `x-svc-versions`
 * extensions.
 */

/** The parts of a route the document needs. */
export type RouteShape = Pick<Route, 'method' | 'path' | 'auth' | 'feature'>;

// The schemas of domains, TLS, keys and certificates, in the order the document lists them.
const { AppTls, Domain, Key, CertificateItem, Certificate } = DOMAIN_SCHEMAS;

const SCHEMAS: Record<string, Schema> = {
  User: object({
    id: { type: 'integer' },
    last_login: { oneOf: [ISO, { type: 'null' }] },
    is_superuser: { type: 'boolean' },
    username: { type: 'string' },
    first_name: { type: 'string' },
    last_name: { type: 'string' },
    email: { type: 'string' },
    is_staff: { type: 'boolean' },
    is_active: { type: 'boolean' },
    date_joined: ISO,
    groups: { type: 'array', maxItems: 0 },
    user_permissions: { type: 'array', maxItems: 0 },
  }),
  Admin: object({ username: { type: 'string' }, is_superuser: { type: 'boolean' } }),
  Token: object({ token: { type: 'string', pattern: '^[0-9a-f]{40}$' } }),
  Application: object({
    id: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 63 },
    uuid: { type: 'string', format: 'uuid' },
    owner: { type: 'string' },
    structure: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 } },
    url: { type: 'string', description: '`<id>.<PLATFORM_DOMAIN>`' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  Container: object({
    owner: { type: 'string' },
    app: { type: 'string' },
    release: { type: 'string', pattern: '^v\\d+$' },
    type: { type: 'string' },
    num: { type: 'integer', minimum: 1 },
    state: { enum: ['initialized', 'created', 'up', 'down', 'crashed', 'error', 'destroyed'] },
    uuid: { type: 'string', format: 'uuid' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  Config: object({
    owner: { type: 'string' },
    app: { type: 'string' },
    values: {
      ...STRING_MAP,
      required: ['SVC_APP', 'SVC_RELEASE'],
      description: 'The user\'s variables plus the service-set `SVC_APP` and `SVC_RELEASE` (`v<N>` of the release).',
    },
    memory: STRING_MAP,
    cpu: { type: 'object', additionalProperties: { type: 'integer', minimum: 0, maximum: 1024 } },
    tags: STRING_MAP,
    uuid: { type: 'string', format: 'uuid' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  ConfigChange: {
    description:
      'Each part is merged into the current config; a null value unsets the key. A JSON string holding this object is accepted too. ' +
      '`SVC_APP` and `SVC_RELEASE` may be repeated with their current values (a pulled config pushed back, as the Deis v1 client does): ' +
      'they are then ignored; any other value, or null, is 400.',
    type: ['object', 'string'],
    properties: {
      values: { type: ['object', 'null'], additionalProperties: { type: ['string', 'number', 'boolean', 'null'] } },
      memory: { type: ['object', 'null'], additionalProperties: { type: ['string', 'null'], pattern: '^[0-9]+(B|K|M|G|KB|MB|GB|b|k|m|g|kb|mb|gb)$' } },
      cpu: { type: ['object', 'null'], additionalProperties: { type: ['integer', 'string', 'null'] } },
      tags: { type: ['object', 'null'], additionalProperties: { type: ['string', 'null'] } },
    },
  },
  AppTls,
  Domain,
  Build: object({
    app: { type: 'string' },
    image: { type: 'string' },
    dockerfile: { type: 'string' },
    procfile: STRING_MAP,
    sha: { type: 'string' },
    owner: { type: 'string' },
    uuid: { type: 'string', format: 'uuid' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  Release: object({
    app: { type: 'string' },
    version: { type: 'integer', minimum: 1 },
    build: { oneOf: [{ type: 'string', format: 'uuid' }, { type: 'null' }] },
    config: { type: 'string', format: 'uuid' },
    summary: { type: 'string' },
    owner: { type: 'string' },
    uuid: { type: 'string', format: 'uuid' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
  }),
  Key,
  CertificateItem,
  Certificate,
  Permissions: object({ users: { type: 'array', items: { type: 'string' } } }),
  RunResult: {
    description: '1.0 to 1.4: `{rc, output}`; from 1.5: `[rc, output]`.',
    oneOf: [
      object({ rc: { type: 'integer' }, output: { type: 'string' } }),
      { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], minItems: 2, maxItems: 2 },
    ],
  },
  RollbackResult: object({ version: { type: 'integer', minimum: 1 } }),
  Empty: object({}),
  Status: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] },
  Detail: object({ detail: { type: 'string' } }),
  FieldErrors: {
    type: 'object',
    description: 'Field validation (400): every failing field at once; `non_field_errors` for cross-field problems.',
    minProperties: 1,
    additionalProperties: { type: 'array', items: { type: 'string' }, minItems: 1 },
  },
  Error: {
    description: 'From 1.1 `{detail}` or field errors; at 1.0 business errors are a bare JSON string.',
    oneOf: [ref('Detail'), ref('FieldErrors'), { type: 'string' }],
  },
};

const RELEASE_HEADERS = 'The new release number is in `X-Svc-Release` and, from 1.4, `Svc-Release`.';

/** Every operation, by `METHOD path` as the route table spells it. */
const OPERATIONS: Record<string, Operation> = {
  'GET /v1': { summary: 'Recognise a controller: 401 without a token, `{}` with one', status: 200, response: 'Empty', tag: 'probes' },
  'GET /healthz': { summary: 'Liveness probe', status: 200, response: 'Status', tag: 'probes' },
  'GET /readyz': { summary: 'Readiness probe: 503 while the database does not answer; 200 with status `degraded` and `reasons` when apps or pushed commits cannot run or be built, `warnings` for what only some builds need', status: 200, response: 'Status', tag: 'probes' },
  'GET /v1/openapi.json': { summary: 'This document', status: 200, response: { type: 'object' }, tag: 'probes' },
  'POST /v1/auth/register': {
    summary: 'Register a user (the first one becomes administrator)',
    description: 'JSON or form-encoded. `REGISTRATION_MODE` may disable registration (403) or allow it to administrators only.',
    body: props(
      {
        username: { type: 'string', minLength: 1, maxLength: 64 },
        password: { type: 'string', minLength: 1, maxLength: 128 },
        email: { type: 'string' },
        first_name: { type: 'string', maxLength: 64 },
        last_name: { type: 'string', maxLength: 64 },
      },
      ['username', 'password', 'email'],
    ),
    status: 201,
    response: 'User',
    tag: 'accounts',
  },
  'POST /v1/auth/login': {
    summary: 'Log in: a new token',
    description: 'Failed logins are throttled per username (429 with `Retry-After`).',
    body: props({ username: { type: 'string' }, password: { type: 'string' } }, ['username', 'password']),
    status: 200,
    response: 'Token',
    tag: 'accounts',
  },
  'DELETE /v1/auth/cancel': {
    summary: "Delete the caller's account, or (administrator) another user's",
    description: 'Naming `username` needs the administrator\'s own `password` at 1.0–1.5, not from 1.6. 409 while the user owns apps.',
    body: props({ username: { type: 'string' }, password: { type: 'string' } }),
    status: 204,
    response: null,
    tag: 'accounts',
  },
  'POST /v1/auth/tokens': {
    summary: 'Revoke tokens and mint a new one (1.5+)',
    body: props({ username: { type: 'string' }, all: { type: ['string', 'boolean'] } }),
    status: 200,
    response: 'Token',
    tag: 'accounts',
  },
  'POST /v1/auth/passwd': {
    summary: 'Change a password (1.4+)',
    description: 'An administrator naming `username` may omit `password` from 1.6.',
    body: props({ password: { type: 'string' }, new_password: { type: 'string' }, username: { type: 'string' } }, ['new_password']),
    status: 200,
    response: null,
    tag: 'accounts',
  },
  'GET /v1/users': list('List users (administrators, 1.3+)', 'User', 'accounts'),
  'GET /v1/admin/perms': list('List administrators', 'Admin', 'accounts'),
  'POST /v1/admin/perms': { summary: 'Make a user administrator', body: props({ username: { type: 'string' } }, ['username']), status: 201, response: null, tag: 'accounts' },
  'DELETE /v1/admin/perms/:username': { summary: "Revoke a user's administrator rights (409 for the last one)", status: 204, response: null, tag: 'accounts' },
  'GET /v1/apps': list('List the apps the caller can see', 'Application', 'apps'),
  'POST /v1/apps': {
    summary: 'Create an app (a name is generated when `id` is omitted)',
    body: props({ id: { type: 'string' } }),
    status: 201,
    response: 'Application',
    tag: 'apps',
  },
  'GET /v1/apps/:id': { summary: 'Show an app', status: 200, response: 'Application', tag: 'apps' },
  'POST /v1/apps/:id': {
    summary: 'Transfer an app to another owner (1.7)',
    body: props({ owner: { type: 'string' } }),
    status: 200,
    response: 'Application',
    tag: 'apps',
  },
  'DELETE /v1/apps/:id': { summary: 'Destroy an app and everything under it', status: 204, response: null, tag: 'apps' },
  'GET /v1/apps/:id/logs': {
    summary: "The app's log",
    description:
      '1.0–1.6: a JSON string of the lines; 1.7: `text/plain`, one line each. `follow=true` streams `text/plain` at every version until the client disconnects.',
    query: [
      { name: 'log_lines', description: 'How many of the last lines (1.3+; default 100, at most 10000).', schema: { type: 'integer', minimum: 1 } },
      { name: 'follow', description: 'Keep the response open and stream new lines.', schema: { type: 'string', enum: ['true', 'false', '1', '0'] } },
    ],
    status: 200,
    response: { type: 'string' },
    tag: 'apps',
  },
  'POST /v1/apps/:id/run': {
    summary: 'Run a one-off command and wait for it',
    description: "At most `QUOTA_RUNS_PER_USER` one-off processes (runs and release phases) of the app owner's apps run at once; one more is refused 429.",
    body: props({ command: { type: 'string' } }, ['command']),
    status: 200,
    response: 'RunResult',
    tag: 'processes',
  },
  'GET /v1/apps/:id/containers': list("List an app's processes, oldest first", 'Container', 'processes'),
  'POST /v1/apps/:id/containers/restart': { summary: 'Restart every process (1.3+)', status: 200, response: { type: 'array', items: ref('Container') }, tag: 'processes' },
  'POST /v1/apps/:id/containers/:type/restart': { summary: 'Restart the processes of a type (1.3+)', status: 200, response: { type: 'array', items: ref('Container') }, tag: 'processes' },
  'POST /v1/apps/:id/containers/:type/:num/restart': { summary: 'Restart one process (1.3+)', status: 200, response: { type: 'array', items: ref('Container') }, tag: 'processes' },
  'GET /v1/apps/:id/containers/:type': list('List the processes of a type', 'Container', 'processes'),
  'POST /v1/apps/:id/scale': {
    summary: 'Scale process types',
    body: { type: 'object', additionalProperties: { type: ['integer', 'string'] } },
    status: 204,
    response: null,
    tag: 'processes',
  },
  'GET /v1/apps/:id/config': { summary: "The app's current config", status: 200, response: 'Config', tag: 'releases' },
  'POST /v1/apps/:id/config': { summary: 'Change the config: a new release', description: RELEASE_HEADERS, body: ref('ConfigChange'), status: 201, response: 'Config', tag: 'releases' },
  'GET /v1/apps/:id/builds': list("List an app's builds", 'Build', 'releases'),
  'POST /v1/apps/:id/builds': {
    summary: 'Deploy an image: a new build and release',
    description: RELEASE_HEADERS,
    body: props(
      { image: { type: 'string', maxLength: 512 }, procfile: STRING_MAP, sha: { type: 'string' }, dockerfile: { type: 'string' } },
      ['image'],
    ),
    status: 201,
    response: 'Build',
    tag: 'releases',
  },
  'GET /v1/apps/:id/releases': list("List an app's releases, newest first", 'Release', 'releases'),
  'POST /v1/apps/:id/releases/rollback': {
    summary: 'Roll back to an earlier release (default: the one before the current one)',
    description:
      `${RELEASE_HEADERS} 409, changing nothing, when the target has no build while the current release has one, ` +
      'or when the scheduler cannot run its build; the detail says why and, for the first, which releases can be rolled back to.',
    body: props({ version: { type: ['integer', 'null'] } }),
    status: 201,
    response: 'RollbackResult',
    tag: 'releases',
  },
  'GET /v1/apps/:id/releases/v:version': { summary: 'Show one release', status: 200, response: 'Release', tag: 'releases' },
  'GET /v1/apps/:id/perms': { summary: "List an app's collaborators", status: 200, response: 'Permissions', tag: 'permissions' },
  'POST /v1/apps/:id/perms': { summary: 'Grant a user access to an app', body: props({ username: { type: 'string' } }, ['username']), status: 201, response: null, tag: 'permissions' },
  'DELETE /v1/apps/:id/perms/:username': { summary: "Revoke a user's access to an app", status: 204, response: null, tag: 'permissions' },
  'POST /v1/apps/:id/perms/:username': { summary: "Revoke a user's access to an app (the seed's spelling; as DELETE)", status: 204, response: null, tag: 'permissions' },
  ...DOMAIN_OPERATIONS,
  ...EVENT_OPERATIONS,
  ...PLATFORM_OPERATIONS,
};

/** The first version that has a feature, read from the version policy. */
function sinceVersion(feature: VersionedFeature): ApiVersion {
  return API_VERSIONS.find((v) => policyFor(v).features.has(feature)) ?? LATEST_API_VERSION;
}

/** `/v1/apps/:id/releases/v:version` → `/v1/apps/{id}/releases/v{version}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_]+)/g, '{$1}');
}

/** The operation key of a route. */
export const operationKey = (route: Pick<RouteShape, 'method' | 'path'>): string => `${route.method.toUpperCase()} ${route.path}`;

const ERROR_RESPONSES: Record<string, string> = {
  '400': 'Invalid input (field errors or `{detail}`)',
  '401': 'No or invalid credentials (`WWW-Authenticate: Token`)',
  '403': 'Not allowed (at 1.0 also: an app the caller may not see)',
  '404': 'Not found (from 1.1 also: an app the caller may not see); also an endpoint newer than the request\'s version',
  '405': 'Method not allowed (with `Allow`), or a client of another major version',
  '406': 'Unsupported API version',
  '409': 'Conflict with the current state (also: a request with the same `Idempotency-Key` still running)',
  '412': '`If-Match` names a version that is no longer current (with the current `ETag`)',
  '413': 'Body over 1 MiB',
  '415': 'A body that is neither JSON nor form-encoded',
  '422': 'An `Idempotency-Key` used before for another request',
  '429': 'Too many failed logins (`Retry-After`), or too many builds, one-off processes or log streams at once',
  '503': 'The scheduler failed; nothing changed',
};

const VERSION_HEADERS_DESCRIPTION = [
  'Every response carries the version headers of the request\'s API version (`SVC_API_VERSION` request header, also `Svc-Api-Version`,',
  '`X_SVC_API_VERSION`; default 1.7 or the operator\'s `SVC_API_VERSION`):',
  '1.0 none; 1.1–1.3 `X_SVC_API_VERSION` and `X_SVC_PLATFORM_VERSION`; from 1.4 also `SVC_API_VERSION`, `SVC_PLATFORM_VERSION`, and the',
  'names the Deis v1 client reads, `DEIS_API_VERSION` and `DEIS_PLATFORM_VERSION`.',
  'Differences by version: 1.1 `{detail}` error bodies and 404 for hidden apps (1.0: bare strings, 403); 1.2 certificates;',
  '1.3 users, log_lines, restart, certificate common_name; 1.4 passwd, renamed headers, `Svc-Release`; 1.5 tokens, run answers an array;',
  '1.6 page_size, administrators act on others without their password; 1.7 app transfer, logs as plain text.',
].join(' ');

/**
 * Builds the OpenAPI 3.1 document from the route table.
 * @throws Error naming any route without an operation entry, or any entry without a route.
 */
export function openApiDocument(routes: readonly RouteShape[], platformVersion: string): Record<string, unknown> {
  const keys = new Set(routes.map(operationKey));
  const undocumented = [...keys].filter((k) => OPERATIONS[k] === undefined);
  const stale = Object.keys(OPERATIONS).filter((k) => !keys.has(k));
  if (undocumented.length > 0 || stale.length > 0) {
    throw new Error(`The OpenAPI document and the routes differ: undocumented ${undocumented.join(', ') || '-'}; no such route ${stale.join(', ') || '-'}`);
  }
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const op = OPERATIONS[operationKey(route)] as Operation;
    const path = openApiPath(route.path);
    const parameters = [
      ...[...route.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
      ...(op.query ?? []).map((q) => ({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema })),
    ];
    const since = route.feature === undefined ? '1.0' : sinceVersion(route.feature);
    const success =
      op.response === null
        ? { description: 'Success, no body' }
        : {
            description: 'Success',
            content:
              route.path.endsWith('/logs')
                ? { 'text/plain': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'string' } } }
                : route.path.endsWith('/events') && route.path.startsWith('/v1/apps')
                ? { 'application/json': { schema: typeof op.response === 'string' ? ref(op.response) : op.response }, 'text/event-stream': { schema: { type: 'string' } } }
                : { 'application/json': { schema: typeof op.response === 'string' ? ref(op.response) : op.response } },
          };
    const errors = Object.fromEntries(
      Object.entries(ERROR_RESPONSES)
        .filter(([status]) => route.auth === 'required' || status !== '401')
        .map(([status, description]) => [status, { description, content: { 'application/json': { schema: ref('Error') } } }]),
    );
    paths[path] ??= {};
    paths[path][route.method] = {
      operationId: `${route.method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
      summary: op.summary,
      ...(op.description === undefined ? {} : { description: op.description }),
      tags: [op.tag],
      'x-svc-since': since,
      'x-svc-versions': API_VERSIONS.filter((v) => route.feature === undefined || policyFor(v).features.has(route.feature)),
      ...(parameters.length === 0 ? {} : { parameters }),
      ...(route.auth === 'required' ? {} : { security: route.auth === 'none' ? [] : [{}, { token: [] }] }),
      ...(op.body === undefined
        ? {}
        : {
            requestBody: {
              required: false,
              content: { 'application/json': { schema: op.body }, 'application/x-www-form-urlencoded': { schema: op.body } },
            },
          }),
      responses: { [String(op.status)]: success, ...errors },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Platform controller API',
      version: platformVersion,
      description: `REST API of the application platform controller, versions 1.0 to 1.7 at once. ${VERSION_HEADERS_DESCRIPTION} Every path also works with a trailing slash. ${EXTENSIONS_DESCRIPTION}`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    'x-svc-api-versions': [...API_VERSIONS],
    servers: [{ url: '/' }],
    security: [{ token: [] }],
    tags: ['probes', 'accounts', 'apps', 'processes', 'releases', 'domains', 'keys', 'permissions', 'certificates', 'events', 'platform'].map((name) => ({ name })),
    paths,
    components: {
      schemas: { ...SCHEMAS, ...EVENT_SCHEMAS, ...PLATFORM_SCHEMAS },
      securitySchemes: {
        token: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`Authorization: token <40 hex characters>` (scheme case-insensitive)' },
      },
    },
  };
}
