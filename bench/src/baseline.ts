/*
 * The bare baseline: the benchmarked endpoints on node:http, with no framework, no
 * dependency injection and no ORM. It runs the same statements as the controller
 * against the same schema through the same drivers (better-sqlite3 or pg), makes the same
 * authentication and visibility checks, verifies passwords with the same scrypt
 * parameters, and answers with the same JSON fields and the headers the API sends on every
 * response (request id, CORS, API version, security). It implements nothing else: it is
 * the floor the controller is measured against, not a second controller.
 *
 * Configuration from the environment: PORT, and BASELINE_SQLITE_FILE (with
 * BASELINE_LOG_DIR for the app logs) or BASELINE_DATABASE_URL (with DB_POOL_SIZE).
 */
import { hash as digest, randomBytes, randomUUID, scrypt, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { postgresStore, sqliteStore, type Queries, type Row, type Store } from './baseline-store';

// ---- rows and JSON -------------------------------------------------------------------

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** `YYYY-MM-DDTHH:MM:SSUTC`, the API's timestamp format. */
function timestamp(value: unknown): string {
  if (typeof value === 'string') return `${value.slice(0, 10)}T${value.slice(11, 19)}UTC`;
  const d = value as Date;
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}UTC`;
}

const json = (value: unknown): Record<string, unknown> =>
  (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>;

const instantMs = (value: unknown): number =>
  typeof value === 'string' ? Date.parse(`${value.replace(' ', 'T')}Z`) : (value as Date).getTime();

const APP_COLUMNS = '"uuid", "id", "owner", "structure", "created", "updated"';
const RELEASE_COLUMNS = '"uuid", "app", "owner", "version", "build", "config", "summary", "created", "updated"';
const CONFIG_COLUMNS = '"uuid", "app", "owner", "values", "memory", "cpu", "tags", "created", "updated"';
const USER_COLUMNS =
  '"id", "username", "email", "first_name", "last_name", "password_hash", "is_superuser", "is_staff", "is_active", "last_login", "date_joined"';

// The token with every column of its user: what the controller loads to authenticate.
const AUTH_SQL =
  'SELECT t."hash" AS "token_hash", t."created" AS "token_created", t."expires" AS "token_expires", ' +
  `${USER_COLUMNS.split(', ')
    .map((column) => `u.${column}`)
    .join(', ')} FROM "tokens" t JOIN "users" u ON u."username" = t."username" WHERE t."hash" = ?`;

const presentApp = (row: Row): Record<string, unknown> => ({
  id: row.id,
  uuid: row.uuid,
  owner: row.owner,
  structure: json(row.structure),
  url: `${String(row.id)}.localhost`,
  created: timestamp(row.created),
  updated: timestamp(row.updated),
});

const presentRelease = (row: Row): Record<string, unknown> => ({
  app: row.app,
  version: row.version,
  build: row.build,
  config: row.config,
  summary: row.summary,
  owner: row.owner,
  uuid: row.uuid,
  created: timestamp(row.created),
  updated: timestamp(row.updated),
});

// ---- HTTP plumbing -------------------------------------------------------------------

class Answer extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

const PLATFORM_VERSION = (() => {
  try {
    const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'packages', 'server', 'package.json'), 'utf8')) as { version?: string };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
})();

/** What the API sends on every response at its default version (1.7). */
const EVERY_RESPONSE = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers':
    'SVC_API_VERSION, SVC_PLATFORM_VERSION, X_SVC_API_VERSION, X_SVC_PLATFORM_VERSION, Svc-Release, X-Svc-Release, X-Request-Id, Retry-After, WWW-Authenticate, Allow',
  X_SVC_API_VERSION: '1.7',
  X_SVC_PLATFORM_VERSION: PLATFORM_VERSION,
  SVC_API_VERSION: '1.7',
  SVC_PLATFORM_VERSION: PLATFORM_VERSION,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Cache-Control': 'no-store',
};

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...EVERY_RESPONSE,
    'X-Request-Id': randomUUID(),
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        const body: unknown = text.trim() === '' ? {} : JSON.parse(text);
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
        resolve(body as Record<string, unknown>);
      } catch {
        reject(new Answer(400, { detail: 'JSON parse error' }));
      }
    });
    req.on('error', reject);
  });
}

// ---- the endpoints -------------------------------------------------------------------

interface Caller {
  username: string;
  admin: boolean;
}

const TOKEN = /^[0-9a-f]{40}$/;

async function authenticate(store: Store, req: IncomingMessage): Promise<Caller> {
  const header = req.headers.authorization ?? '';
  const [scheme = '', token = ''] = header.trim().split(/\s+/);
  if (scheme.toLowerCase() !== 'token' || !TOKEN.test(token)) throw new Answer(401, { detail: 'Invalid token.' });
  const hash = digest('sha256', token, 'hex');
  const rows = await store.all(AUTH_SQL, [hash]);
  const row = rows[0];
  if (
    row === undefined ||
    (row.token_expires !== null && instantMs(row.token_expires) <= Date.now()) ||
    !(row.is_active === true || row.is_active === 1)
  ) {
    throw new Answer(401, { detail: 'Invalid token.' });
  }
  return { username: row.username as string, admin: row.is_superuser === true || row.is_superuser === 1 };
}

/** The app row, when the caller may see it (owner, administrator or collaborator); 404 otherwise. */
async function visibleApp(db: Queries, caller: Caller, id: string, lockSuffix = ''): Promise<Row> {
  const app = (await db.all(`SELECT ${APP_COLUMNS} FROM "apps" WHERE "id" = ?${lockSuffix}`, [id]))[0];
  if (app === undefined) throw new Answer(404, { detail: 'Not found.' });
  if (app.owner !== caller.username && !caller.admin) {
    const granted = await db.all('SELECT 1 AS "granted" FROM "permissions" WHERE "app" = ? AND "username" = ? LIMIT 1', [id, caller.username]);
    if (granted.length === 0) throw new Answer(404, { detail: 'Not found.' });
  }
  return app;
}

const PAGE_SIZE = 100;

function pageOf(search: URLSearchParams): number {
  const raw = search.get('page');
  if (raw === null) return 1;
  if (!/^[0-9]{1,15}$/.test(raw) || Number(raw) < 1) throw new Answer(400, { page: ['A valid positive integer is required.'] });
  return Number(raw);
}

function envelope(count: number, page: number, host: string, path: string, results: unknown[]): Record<string, unknown> {
  const link = (n: number): string => `http://${host}${path}${n === 1 ? '' : `?page=${n}`}`;
  return {
    count,
    next: page * PAGE_SIZE < count ? link(page + 1) : null,
    previous: page > 1 ? link(page - 1) : null,
    results,
  };
}

async function listApps(store: Store, caller: Caller, page: number): Promise<{ count: number; rows: Row[] }> {
  const offset = (page - 1) * PAGE_SIZE;
  if (caller.admin) {
    const rows = await store.all(`SELECT ${APP_COLUMNS} FROM "apps" ORDER BY "id" LIMIT ? OFFSET ?`, [PAGE_SIZE, offset]);
    const count = await store.all('SELECT "apps" FROM "app_totals"', []);
    return { count: Number(count[0]?.apps ?? 0), rows };
  }
  // The first offset + limit ids of each source, merged: both walk an index in id order.
  const rows = await store.all(
    `SELECT ${APP_COLUMNS} FROM "apps" WHERE "id" IN (
       SELECT "id" FROM (SELECT "id" FROM "apps" WHERE "owner" = ? ORDER BY "id" LIMIT ?) AS "owned"
       UNION
       SELECT "app" FROM (SELECT "app" FROM "permissions" WHERE "username" = ? ORDER BY "app" LIMIT ?) AS "shared"
     ) ORDER BY "id" LIMIT ? OFFSET ?`,
    [caller.username, offset + PAGE_SIZE, caller.username, offset + PAGE_SIZE, PAGE_SIZE, offset],
  );
  const count = await store.all('SELECT "apps" FROM "visible_app_counts" WHERE "username" = ?', [caller.username]);
  return { count: Number(count[0]?.apps ?? 0), rows };
}

async function listReleases(store: Store, app: string, page: number): Promise<{ count: number; rows: Row[] }> {
  const offset = (page - 1) * PAGE_SIZE;
  const rows = await store.all(`SELECT ${RELEASE_COLUMNS} FROM "releases" WHERE "app" = ? ORDER BY "version" DESC LIMIT ? OFFSET ?`, [
    app,
    PAGE_SIZE,
    offset,
  ]);
  const count = await store.all('SELECT "releases" FROM "app_list_counts" WHERE "app" = ?', [app]);
  return { count: Number(count[0]?.releases ?? 0), rows };
}

const CONFIG_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

const EVENT_COLUMNS = '"uuid", "created", "actor", "action", "app", "target", "summary", "request_id", "address"';
const HOOK_COLUMNS = '"uuid", "app", "owner", "url", "events", "sealed_secret", "created"';

/** Who sent a request, as the audit journal records it. */
interface RequestTrace {
  id: string;
  address: string;
}

/**
 * The audit journal's two entries of a config change (`config.update`, `release.create`), in
 * its transaction as the controller writes them: on PostgreSQL under the journal's advisory
 * lock with one NOTIFY, and the app's webhooks read for the deliveries to queue (none
 * subscribe here).
 */
async function journalConfigChange(
  tx: Queries,
  dialect: Store['dialect'],
  change: { app: string; actor: string; version: number; summary: string; at: unknown },
  request: RequestTrace,
): Promise<void> {
  const postgres = dialect === 'postgres';
  if (postgres) await tx.all('SELECT pg_advisory_xact_lock(7348201)', []);
  await tx.all(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "app" = ? ORDER BY "created", "uuid"`, [change.app]);
  for (const action of ['config.update', 'release.create']) {
    await tx.run(`INSERT INTO "events" (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      randomUUID(),
      change.at,
      change.actor,
      action,
      change.app,
      `v${change.version}`,
      change.summary,
      request.id,
      request.address,
    ]);
  }
  if (postgres) await tx.all("SELECT pg_notify('svc_events', '')", []);
}

async function setConfig(
  store: Store,
  caller: Caller,
  id: string,
  body: Record<string, unknown>,
  request: RequestTrace,
): Promise<{ version: number; config: Row }> {
  const values = body.values ?? {};
  if (typeof values !== 'object' || values === null || Array.isArray(values)) throw new Answer(400, { values: ['Expected a dictionary.'] });
  const changes = values as Record<string, unknown>;
  for (const [key, value] of Object.entries(changes)) {
    if (!CONFIG_KEY.test(key) || key.startsWith('SVC_') || (value !== null && typeof value === 'object')) {
      throw new Answer(400, { values: [`Invalid config variable ${key}.`] });
    }
  }
  const published = await store.transaction(async (tx) => {
    const app = await visibleApp(tx, caller, id, store.lockSuffix);
    const current = (await tx.all(`SELECT ${RELEASE_COLUMNS} FROM "releases" WHERE "app" = ? ORDER BY "version" DESC LIMIT 1`, [id]))[0];
    if (current === undefined) throw new Answer(404, { detail: 'Not found.' });
    const config = (await tx.all(`SELECT ${CONFIG_COLUMNS} FROM "configs" WHERE "uuid" = ?`, [current.config]))[0] as Row;
    if (current.build !== null) await tx.all('SELECT "uuid" FROM "builds" WHERE "uuid" = ?', [current.build]);
    const merged: Record<string, string> = { ...(json(config.values) as Record<string, string>) };
    for (const [key, value] of Object.entries(changes)) {
      if (value === null) delete merged[key];
      else merged[key] = String(value);
    }
    const now = new Date();
    const at = store.instant(now);
    const configUuid = randomUUID();
    const version = Number(current.version) + 1;
    const owner = caller.username;
    await tx.run(`INSERT INTO "configs" (${CONFIG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      configUuid,
      app.id,
      owner,
      JSON.stringify(merged),
      JSON.stringify(json(config.memory)),
      JSON.stringify(json(config.cpu)),
      JSON.stringify(json(config.tags)),
      at,
      at,
    ]);
    const summary = `${owner} changed ${Object.keys(changes).sort().join(', ') || 'nothing'}`;
    await tx.run(`INSERT INTO "releases" (${RELEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      randomUUID(),
      app.id,
      owner,
      version,
      current.build,
      configUuid,
      summary,
      at,
      at,
    ]);
    await journalConfigChange(tx, store.dialect, { app: app.id as string, actor: owner, version, summary, at }, request);
    // A release without a build has nothing to run: its app's containers go.
    const containers = await tx.all(`SELECT "uuid" FROM "containers" WHERE "app" = ? AND "type" <> 'run' ORDER BY "created", "type", "num", "uuid"`, [id]);
    for (const container of containers) await tx.run('DELETE FROM "containers" WHERE "uuid" = ?', [container.uuid]);
    return {
      version,
      summary,
      now,
      config: { ...config, uuid: configUuid, owner, values: merged, created: now, updated: now },
    };
  });
  await store.appendLog(id, published.now, published.summary);
  return published;
}

/** Verifies `password` against `scrypt$N$r$p$salt$hash` with the parameters stored in the hash. */
function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return Promise.resolve(false);
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const salt = Buffer.from(parts[4] as string, 'base64');
  const expected = Buffer.from(parts[5] as string, 'base64');
  const maxmem = 2 * 128 * r * (N + p + 2);
  return new Promise((resolve) => {
    scrypt(password.normalize('NFC'), salt, expected.length, { N, r, p, maxmem }, (error, key) => {
      resolve(error === null && timingSafeEqual(key, expected));
    });
  });
}

const FAILURE_WINDOW_MS = 15 * 60 * 1000;
const FAILURE_LIMIT = 10;
const INVALID_CREDENTIALS = { non_field_errors: ['Unable to log in with provided credentials.'] };

async function login(store: Store, body: Record<string, unknown>): Promise<string> {
  const { username, password } = body;
  if (typeof username !== 'string' || typeof password !== 'string') throw new Answer(400, { username: ['This field is required.'] });
  const now = new Date();
  const failures = await store.all('SELECT "at" FROM "login_failures" WHERE "username" = ? AND "at" >= ? ORDER BY "at" ASC, "id" ASC', [
    username,
    store.instant(new Date(now.getTime() - FAILURE_WINDOW_MS + 1)),
  ]);
  if (failures.length >= FAILURE_LIMIT) throw new Answer(429, { detail: 'Request was throttled.' });
  const user = (await store.all(`SELECT ${USER_COLUMNS} FROM "users" WHERE "username" = ?`, [username]))[0];
  const matches = user !== undefined && (await verifyPassword(password, user.password_hash as string));
  if (user === undefined || !matches || !(user.is_active === true || user.is_active === 1)) {
    await store.transaction((tx) => tx.run('INSERT INTO "login_failures" ("username", "at") VALUES (?, ?)', [username, store.instant(now)]));
    throw new Answer(400, INVALID_CREDENTIALS);
  }
  const token = randomBytes(20).toString('hex');
  await store.transaction(async (tx) => {
    await tx.run('DELETE FROM "login_failures" WHERE "username" = ?', [username]);
    await tx.run(
      'UPDATE "users" SET "email" = ?, "first_name" = ?, "last_name" = ?, "password_hash" = ?, "is_superuser" = ?, "is_staff" = ?, "is_active" = ?, "last_login" = ?, "date_joined" = ? WHERE "username" = ?',
      [
        user.email,
        user.first_name,
        user.last_name,
        user.password_hash,
        user.is_superuser,
        user.is_staff,
        user.is_active,
        store.instant(now),
        user.date_joined,
        username,
      ],
    );
    await tx.run('INSERT INTO "tokens" ("hash", "username", "created", "expires") VALUES (?, ?, ?, NULL)', [
      digest('sha256', token, 'hex'),
      username,
      store.instant(now),
    ]);
  });
  return token;
}

async function handle(store: Store, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = req.url ?? '/';
  const mark = raw.indexOf('?');
  const path = (mark < 0 ? raw : raw.slice(0, mark)).replace(/\/+$/, '');
  const search = new URLSearchParams(mark < 0 ? '' : raw.slice(mark + 1));
  const parts = path.split('/');
  const method = req.method ?? 'GET';

  if (method === 'GET' && path === '/healthz') return send(res, 200, { status: 'ok' });
  if (method === 'POST' && path === '/v1/auth/login') {
    return send(res, 200, { token: await login(store, await readJson(req)) });
  }
  if (parts[1] !== 'v1' || parts[2] !== 'apps') throw new Answer(404, { detail: 'Not found.' });
  const caller = await authenticate(store, req);

  if (parts.length === 3 && method === 'GET') {
    const page = pageOf(search);
    const { count, rows } = await listApps(store, caller, page);
    if (page > 1 && (page - 1) * PAGE_SIZE >= count) throw new Answer(404, { detail: 'Invalid page.' });
    return send(res, 200, envelope(count, page, req.headers.host ?? 'localhost', path, rows.map(presentApp)));
  }
  const id = parts[3] ?? '';
  if (parts.length === 4 && method === 'GET') return send(res, 200, presentApp(await visibleApp(store, caller, id)));
  if (parts.length === 5 && parts[4] === 'releases' && method === 'GET') {
    const page = pageOf(search);
    await visibleApp(store, caller, id);
    const { count, rows } = await listReleases(store, id, page);
    if (page > 1 && (page - 1) * PAGE_SIZE >= count) throw new Answer(404, { detail: 'Invalid page.' });
    return send(res, 200, envelope(count, page, req.headers.host ?? 'localhost', path, rows.map(presentRelease)));
  }
  if (parts.length === 5 && parts[4] === 'config' && method === 'POST') {
    const request = { id: randomUUID(), address: req.socket.remoteAddress ?? '' };
    const { version, config } = await setConfig(store, caller, id, await readJson(req), request);
    return send(
      res,
      201,
      {
        owner: config.owner,
        app: config.app,
        values: { ...(config.values as Record<string, string>), SVC_APP: id, SVC_RELEASE: `v${version}` },
        memory: json(config.memory),
        cpu: json(config.cpu),
        tags: json(config.tags),
        uuid: config.uuid,
        created: timestamp(config.created),
        updated: timestamp(config.updated),
      },
      { 'Svc-Release': `v${version}`, 'X-Svc-Release': `v${version}`, 'X-Request-Id': request.id },
    );
  }
  throw new Answer(404, { detail: 'Not found.' });
}

function main(): void {
  const port = Number(process.env.PORT ?? '0');
  const url = process.env.BASELINE_DATABASE_URL;
  const store =
    url !== undefined && url !== ''
      ? postgresStore(url, Number(process.env.DB_POOL_SIZE ?? '10'))
      : sqliteStore(process.env.BASELINE_SQLITE_FILE ?? 'controller.sqlite', process.env.BASELINE_LOG_DIR ?? 'baseline-logs');
  const server = createServer((req, res) => {
    handle(store, req, res).catch((error: unknown) => {
      if (error instanceof Answer) send(res, error.status, error.body);
      else {
        process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        send(res, 500, { detail: 'Internal server error.' });
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1');
  const stop = (): void => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
