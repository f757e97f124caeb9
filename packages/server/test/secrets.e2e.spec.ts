import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AesGcmSecretBox } from '@svc/crypto-node';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, E2E_TIMEOUT_MS, TOKEN, type HttpResponse, type RequestOptions } from './support';
import { ecdsaPair } from './support/certs';
import { SqliteReader } from './support/sqlite-snapshot';
import { ed25519PublicKey } from './support/ssh-keys';

/*
 * Secrets stay secret: after a full scenario, none of the passwords, tokens, config values or
 * private keys appear in the server's log (captured at the most verbose level); in the raw
 * database file, private keys are sealed, passwords are scrypt hashes and tokens SHA-256
 * hashes; failed logins are throttled and take as long for unknown users as for known ones;
 * every response carries the security headers and no X-Powered-By.
 */

const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
};

/** The base64 lines of a PEM body (what would betray the key if it leaked). */
function pemBody(pem: string): string[] {
  return pem
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length >= 16 && !line.startsWith('-----'));
}

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

describe('secrets', () => {
  jest.setTimeout(E2E_TIMEOUT_MS * 2);
  let dataDir: string;
  let running: RunningServer;
  let api: ApiClient;
  const logLines: string[] = [];
  /** Every response of the scenario, for the header checks. */
  const responses: Array<{ what: string; res: HttpResponse<unknown> }> = [];
  /** Everything that must never be logged. */
  const secrets = new Map<string, string>();
  let certificateKey: string;
  let adminToken: string;
  let aliceToken: string;
  let alicePassword: string;

  async function send<T = Record<string, unknown>>(client: ApiClient, method: 'GET' | 'POST' | 'DELETE', path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
    const res = await client.request<T>(method, path, options);
    responses.push({ what: `${method} ${path}`, res: res as HttpResponse<unknown> });
    return res;
  }

  async function loginAs(username: string, password: string): Promise<string> {
    const res = await send<{ token: string }>(api, 'POST', '/v1/auth/login/', { json: { username, password }, token: null });
    expect(res.status).toBe(200);
    expect(res.body.token).toMatch(TOKEN);
    secrets.set(`token of ${username}`, res.body.token);
    return res.body.token;
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-secrets-'));
    const config = loadConfig({ SCHEDULER: 'memory', HOST: '127.0.0.1', PORT: '0', ROUTER_PORT: '0', GIT_SSH_PORT: 'off', DATA_DIR: dataDir });
    // The most verbose level, into memory: whatever the server would ever write is scanned.
    const logger = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) });
    running = await startServer(config, logger);
    api = new ApiClient(running.url);

    // A full scenario: accounts, an app with config and a deploy, keys, a certificate,
    // password change, token regeneration, failed logins, errors, and secrets in query strings.
    const adminPassword = 'Admin-Pa55word-7f3a9c';
    alicePassword = 'Alice-Pa55word-b81d2e';
    secrets.set('admin password', adminPassword);
    secrets.set('alice password', alicePassword);
    for (const [username, password] of [['root', adminPassword], ['alice', alicePassword]] as const) {
      expect((await send(api, 'POST', '/v1/auth/register/', { json: { username, password, email: `${username}@example.com` }, token: null })).status).toBe(201);
    }
    adminToken = await loginAs('root', adminPassword);
    aliceToken = await loginAs('alice', alicePassword);
    const alice = api.as(aliceToken);
    expect((await send(alice, 'POST', '/v1/apps/', { json: { id: 'secret-app' } })).status).toBe(201);
    const configValue = 'postgres://app:Cfg-Va1ue-5e6f7a8b@db.internal/app';
    secrets.set('config value', configValue);
    secrets.set('second config value', 'sk_live_9c8b7a6d5e4f3a2b');
    expect((await send(alice, 'POST', '/v1/apps/secret-app/config/', { json: { values: { DATABASE_URL: configValue, STRIPE_KEY: 'sk_live_9c8b7a6d5e4f3a2b' } } })).status).toBe(201);
    // A rejected config carrying a secret-looking value is not echoed to the log either.
    secrets.set('rejected config value', 'Rejected-Secret-0a1b2c3d');
    expect((await send(alice, 'POST', '/v1/apps/secret-app/config/', { json: { values: { 'BAD NAME': 'Rejected-Secret-0a1b2c3d' } } })).status).toBe(400);
    expect((await send(alice, 'POST', '/v1/apps/secret-app/builds/', { json: { image: 'example/app:v1', procfile: { web: 'serve' } } })).status).toBe(201);
    expect((await send(alice, 'POST', '/v1/apps/secret-app/scale/', { json: { web: 2 } })).status).toBe(204);
    expect((await send(alice, 'POST', '/v1/apps/secret-app/run/', { json: { command: 'env' } })).status).toBe(200);
    expect((await send(alice, 'GET', '/v1/apps/secret-app/config/')).status).toBe(200);
    expect((await send(alice, 'POST', '/v1/keys/', { json: { id: 'laptop', public: ed25519PublicKey() } })).status).toBe(201);
    for (const domain of ['ec.example.com', 'www.ec.example.com']) {
      expect((await send(alice, 'POST', '/v1/apps/secret-app/domains/', { json: { domain } })).status).toBe(201);
    }
    const pair = ecdsaPair();
    certificateKey = pair.key;
    const cert = await send(alice, 'POST', '/v1/certs/', { json: pair });
    expect(cert.status).toBe(201);
    // No endpoint returns a private key.
    for (const line of pemBody(pair.key)) expect(cert.text).not.toContain(line);
    const detail = await send(alice, 'GET', '/v1/certs/ec.example.com');
    expect(detail.status).toBe(200);
    for (const line of pemBody(pair.key)) expect(detail.text).not.toContain(line);
    // Secrets in a query string (where clients sometimes put them) are not logged with the path.
    expect((await send(alice, 'GET', `/v1/apps?token=${aliceToken}&password=${alicePassword}`)).status).toBe(200);
    // Wrong passwords and bad tokens.
    const wrongPassword = 'Wrong-Pa55word-d4c3b2a1';
    secrets.set('wrong password', wrongPassword);
    expect((await send(api, 'POST', '/v1/auth/login/', { json: { username: 'alice', password: wrongPassword }, token: null })).status).toBe(400);
    const forgedToken = 'f'.repeat(40);
    secrets.set('forged token', forgedToken);
    expect((await send(api.as(forgedToken), 'GET', '/v1/apps')).status).toBe(401);
    // Password change, and a token regenerated by an administrator.
    const newPassword = 'Alice-N3w-Pa55word-c0ffee';
    secrets.set('new password', newPassword);
    expect((await send(alice, 'POST', '/v1/auth/passwd/', { json: { password: alicePassword, new_password: newPassword } })).status).toBe(200);
    alicePassword = newPassword;
    const regenerated = await send<{ token: string }>(api.as(adminToken), 'POST', '/v1/auth/tokens/', { json: { username: 'alice' } });
    expect(regenerated.status).toBe(200);
    aliceToken = regenerated.body.token;
    secrets.set('regenerated token', aliceToken);
    expect((await send(api.as(aliceToken), 'GET', '/v1/apps/secret-app/')).status).toBe(200);
    // The same token in the other header spellings clients use.
    expect((await send(api, 'GET', '/v1/', { token: null, headers: { Authorization: `Token ${aliceToken}` } })).status).toBe(200);
    expect((await send(api, 'GET', '/v1/', { token: null, headers: { Authorization: `Bearer ${aliceToken}` } })).status).toBe(401);
  });

  afterAll(async () => {
    await running?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('the log has a line for every request, with its path', () => {
    const requests = logLines.filter((line) => line.includes('"msg":"request"'));
    expect(requests.length).toBeGreaterThanOrEqual(responses.length);
    // Paths are logged: a secret in a path would be caught by the scan below.
    expect(logLines.join('')).toContain('/v1/apps/secret-app/config/');
  });

  it('no password, token, config value or private key appears in the log', () => {
    const log = logLines.join('');
    const leaked = [...secrets].filter(([, value]) => log.includes(value)).map(([name]) => name);
    for (const line of pemBody(certificateKey)) if (log.includes(line)) leaked.push(`private key line ${line.slice(0, 12)}…`);
    expect(leaked).toEqual([]);
  });

  it('the raw database holds no private key, password or token in plain text', () => {
    const raw = ['controller.sqlite', 'controller.sqlite-wal']
      .map((file) => join(dataDir, file))
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(raw.length).toBeGreaterThan(0);
    const found = [...secrets]
      .filter(([name]) => name.includes('password') || name.includes('token'))
      .filter(([, value]) => raw.includes(value))
      .map(([name]) => name);
    for (const line of pemBody(certificateKey)) if (raw.includes(line)) found.push(`private key line ${line.slice(0, 12)}…`);
    expect(found).toEqual([]);
    // A positive control: what is not secret is found in the same bytes.
    expect(raw).toContain('secret-app');
  });

  it('private keys are sealed with the server secret (v1 AES-256-GCM) and open with it', () => {
    const reader = new SqliteReader(dataDir);
    try {
      const rows = reader.rows<{ common_name: string; sealed_key: string }>('certificates');
      expect(rows.map((r) => r.common_name)).toEqual(['ec.example.com']);
      const sealed = rows[0]!.sealed_key;
      expect(sealed).toMatch(/^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
      const secretKey = readFileSync(join(dataDir, 'secret_key'), 'utf8').trim();
      expect(new AesGcmSecretBox(secretKey).open(sealed)).toBe(certificateKey);
      expect(() => new AesGcmSecretBox('another secret key of forty characters!!').open(sealed)).toThrow();
    } finally {
      reader.close();
    }
  });

  it('passwords are stored as salted scrypt hashes and tokens as their SHA-256', () => {
    const reader = new SqliteReader(dataDir);
    try {
      const users = reader.rows<{ username: string; password_hash: string }>('users');
      for (const user of users) expect(user.password_hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]{20,}\$[A-Za-z0-9+/=]{40,}$/);
      const salts = users.map((u) => u.password_hash.split('$')[4]);
      expect(new Set(salts).size).toBe(salts.length);
      const hashes = reader.rows<{ hash: string; username: string }>('tokens');
      expect(hashes.every((t) => /^[0-9a-f]{64}$/.test(t.hash))).toBe(true);
      expect(hashes).toEqual(expect.arrayContaining([{ hash: sha256(aliceToken), username: 'alice', created: expect.anything(), expires: null }]));
      expect(hashes).toEqual(expect.arrayContaining([expect.objectContaining({ hash: sha256(adminToken), username: 'root' })]));
    } finally {
      reader.close();
    }
  });

  it('every response carried the security headers and no X-Powered-By', () => {
    expect(responses.length).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const { what, res } of responses) {
      if (res.headers.get('x-powered-by') !== null) missing.push(`${what}: X-Powered-By`);
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) if (res.headers.get(name) !== value) missing.push(`${what}: ${name}`);
      // Plain HTTP without a trusted proxy: no HSTS.
      if (res.headers.get('strict-transport-security') !== null) missing.push(`${what}: HSTS over http`);
    }
    expect(missing).toEqual([]);
  });

  it('after 10 failed logins the user is throttled with 429 and a numeric Retry-After, even with the right password', async () => {
    expect((await send(api, 'POST', '/v1/auth/register/', { json: { username: 'victim', password: 'Victim-Pa55', email: 'v@example.com' }, token: null })).status).toBe(201);
    for (let attempt = 1; attempt <= 10; attempt++) {
      const res = await send(api, 'POST', '/v1/auth/login/', { json: { username: 'victim', password: `guess-${attempt}` }, token: null });
      expect([attempt, res.status]).toEqual([attempt, 400]);
    }
    const throttled = await send(api, 'POST', '/v1/auth/login/', { json: { username: 'victim', password: 'Victim-Pa55' }, token: null });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(Number(throttled.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60);
    // Another user is not affected.
    expect(await loginAs('alice', alicePassword)).toMatch(TOKEN);
  });

  it('a login for an unknown user takes as long as one with a wrong password (no account enumeration by timing)', async () => {
    const timed = async (username: string): Promise<number> => {
      const started = process.hrtime.bigint();
      const res = await api.post('/v1/auth/login/', { username, password: 'not-the-password' }, { token: null });
      expect(res.status).toBe(400);
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 5; i++) {
      known.push(await timed('root'));
      unknown.push(await timed(`nobody-${i}`));
    }
    // A real scrypt verification costs tens of milliseconds; skipping it for unknown users
    // would make those answers many times faster.
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.4);
  });
});
