import request from 'supertest';
import type { ListApps } from '@svc/core';
import { adminAndAlice, auth, createApp, harness, signUp } from './harness';

describe('Paths and methods', () => {
  const h = harness();
  let alice: string;
  beforeAll(async () => {
    ({ alice } = await adminAndAlice(h.app));
    await createApp(h.app, alice, 'myapp');
  });

  it.each(['/v1/apps', '/v1/apps/', '/v1/apps/myapp', '/v1/apps/myapp/', '/v1/apps/myapp/config', '/v1/apps/myapp/config/'])(
    'GET %s is served without a redirect',
    async (path) => {
      const res = await request(h.app).get(path).set('Authorization', auth(alice)).redirects(0);
      expect(res.status).toBe(200);
      expect(res.headers.location).toBeUndefined();
    },
  );

  it.each(['/v1/auth/login', '/v1/auth/login/'])('POST %s works with and without the slash', async (path) => {
    const res = await request(h.app).post(path).send({ username: 'alice', password: 'pw-alice' }).redirects(0);
    expect(res.status).toBe(200);
    expect(res.body.token).toMatch(/^[0-9a-f]{40}$/);
  });

  it('an unknown path is a JSON 404, with or without credentials', async () => {
    for (const path of ['/', '/v2/apps', '/v1/apps/myapp/nothing', '/v1/apps//', '/V1/APPS']) {
      const res = await request(h.app).get(path).set('Authorization', auth(alice));
      expect([path, res.status, res.body]).toEqual([path, 404, { detail: 'Not found.' }]);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    }
    await request(h.app).delete('/whatever').expect(404, { detail: 'Not found.' });
  });

  it('a known path with another method is 405 with Allow', async () => {
    const res = await request(h.app).put('/v1/apps/').set('Authorization', auth(alice)).expect(405);
    expect(res.body).toEqual({ detail: 'Method "PUT" not allowed.' });
    expect(res.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
    const old = await request(h.app).put('/v1/apps').set('Authorization', auth(alice)).set('SVC_API_VERSION', '1.2').expect(405);
    // 405 answers speak the server's default version whatever the request chose.
    expect(old.headers.svc_api_version).toBe('1.7');
    expect(old.headers.x_svc_api_version).toBe('1.7');
    const del = await request(h.app).delete('/v1/auth/login').expect(405);
    expect(del.body).toEqual({ detail: 'Method "DELETE" not allowed.' });
    expect(del.headers.allow).toBe('POST, OPTIONS');
  });

  it('overlapping paths: GET containers/restart lists the type "restart", GET on a restart path is 405', async () => {
    await request(h.app).get('/v1/apps/myapp/containers/restart').set('Authorization', auth(alice)).expect(200);
    const res = await request(h.app).get('/v1/apps/myapp/containers/web/restart').set('Authorization', auth(alice)).expect(405);
    expect(res.headers.allow).toBe('POST, OPTIONS');
    await request(h.app).post('/v1/apps/myapp/containers/web').set('Authorization', auth(alice)).expect(405);
  });

  it('HEAD is answered where GET is', async () => {
    const res = await request(h.app).head('/v1/apps').set('Authorization', auth(alice));
    expect(res.status).toBe(200);
  });

  it.each([
    ['a very long app id', `/v1/apps/${'a'.repeat(5000)}`],
    ['unicode', '/v1/apps/%C3%A9t%C3%A9'],
    ['dot-dot', '/v1/apps/..'],
    ['encoded dot-dot', '/v1/apps/%2e%2e'],
    ['an encoded slash', '/v1/apps/my%2Fapp'],
    ['NUL', '/v1/apps/%00'],
    ['NUL in a sub-resource', '/v1/apps/myapp/containers/%00'],
    ['a non-numeric release', '/v1/apps/myapp/releases/vabc'],
    ['an unknown release', '/v1/apps/myapp/releases/v99'],
    ['a huge release number', `/v1/apps/myapp/releases/v${'9'.repeat(40)}`],
    ['NUL in a certificate name', '/v1/certs/%00'],
    ['a long certificate name', `/v1/certs/${'c'.repeat(3000)}`],
  ])('GET with %s is 404, never 500', async (_name, path) => {
    const res = await request(h.app).get(path).set('Authorization', auth(alice));
    expect(res.status).toBe(404);
    expect(res.body).toEqual(expect.objectContaining({ detail: expect.any(String) }));
  });

  it.each([
    ['a key with NUL', '/v1/keys/%00'],
    ['a key name of 129 characters', `/v1/keys/${'k'.repeat(129)}`],
    ['a domain with NUL', '/v1/apps/myapp/domains/%00'],
    ['a unicode domain', '/v1/apps/myapp/domains/%E2%98%83.example.com'],
    ['an invalid username', '/v1/apps/myapp/perms/%00'],
    ['an invalid admin username', '/v1/admin/perms/a%20b'],
  ])('DELETE with %s is 404, never 500', async (_name, path) => {
    const res = await request(h.app).delete(path).set('Authorization', auth(alice));
    expect(res.status).toBe(404);
  });

  it.each([
    ['a non-numeric container number', '/v1/apps/myapp/containers/web/abc/restart'],
    ['container number 0', '/v1/apps/myapp/containers/web/0/restart'],
    ['an invalid process type', '/v1/apps/myapp/containers/Web!/restart'],
  ])('POST restart with %s is 404', async (_name, path) => {
    await request(h.app).post(path).set('Authorization', auth(alice)).expect(404);
  });

  it('broken percent-encoding is 400, not 500', async () => {
    const res = await request(h.app).get('/v1/apps/%E0%A4%A').set('Authorization', auth(alice)).expect(400);
    expect(res.body).toEqual({ detail: 'Malformed URL: invalid percent-encoding.' });
  });
});

describe('Common response headers', () => {
  const h = harness();

  it('no X-Powered-By, and no CORS headers for a request without an Origin', async () => {
    const res = await request(h.app).get('/healthz').expect(200);
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('by default a cross-origin request is refused 403 without any CORS allowance, authenticated or not', async () => {
    const token = await signUp(h.app, 'corsalice');
    for (const res of [
      await request(h.app).get('/v1/apps').set('Origin', 'https://evil.example.net').set('Authorization', auth(token)),
      await request(h.app).post('/v1/auth/register').set('Origin', 'null').type('form').send({ username: 'x', password: 'y' }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: 'Cross-origin requests from this origin are not allowed.' });
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    }
    expect((await h.uow.repositories.users.findByUsername('x'))).toBeNull();
  });

  it('by default a preflight is refused 403 without Access-Control-Allow-* headers', async () => {
    const res = await request(h.app)
      .options('/v1/apps/myapp/config')
      .set('Origin', 'https://ui.example.com')
      .set('Access-Control-Request-Method', 'POST')
      .expect(403);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
  });

  describe('with an allow-list', () => {
    const allowed = harness({ corsAllowedOrigins: ['https://ui.example.com'] });

    it('an allowed origin gets itself as Access-Control-Allow-Origin and the version headers exposed, on errors too', async () => {
      const res = await request(allowed.app).get('/v1/apps').set('Origin', 'https://ui.example.com').expect(401);
      expect(res.headers['access-control-allow-origin']).toBe('https://ui.example.com');
      expect(res.headers.vary).toMatch(/Origin/);
      const exposed = (res.headers['access-control-expose-headers'] as string).split(', ');
      expect(exposed).toEqual(
        expect.arrayContaining(['SVC_API_VERSION', 'SVC_PLATFORM_VERSION', 'X_SVC_API_VERSION', 'X_SVC_PLATFORM_VERSION', 'Svc-Release', 'X-Svc-Release']),
      );
    });

    it('a preflight from an allowed origin is answered 204 without credentials', async () => {
      const res = await request(allowed.app)
        .options('/v1/apps/myapp/config')
        .set('Origin', 'https://ui.example.com')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type, svc_api_version')
        .expect(204);
      expect(res.headers['access-control-allow-origin']).toBe('https://ui.example.com');
      expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, POST, DELETE, OPTIONS');
      const headers = (res.headers['access-control-allow-headers'] as string).split(', ');
      expect(headers).toEqual(expect.arrayContaining(['Authorization', 'Content-Type', 'SVC_API_VERSION', 'Svc-Api-Version', 'X_SVC_API_VERSION']));
      expect(res.headers.svc_api_version).toBe('1.7');
    });

    it('another origin is still refused', async () => {
      const res = await request(allowed.app).get('/healthz').set('Origin', 'https://ui.example.com.evil.net').expect(403);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('"*" allows any origin with Access-Control-Allow-Origin: *', async () => {
      const any = harness({ corsAllowedOrigins: ['*'] });
      const res = await request(any.app).get('/healthz').set('Origin', 'https://anything.example.org').expect(200);
      expect(res.headers['access-control-allow-origin']).toBe('*');
    });
  });

  describe('Host header', () => {
    it('answers IP addresses, localhost, the platform domain and configured names', async () => {
      for (const host of ['127.0.0.1:8000', '[::1]:8000', '10.1.2.3', 'localhost:8000', 'api.localhost', 'svc.test', 'controller.svc.test', 'api.example.com']) {
        const res = await request(h.app).get('/v1/apps').set('Host', host);
        expect([host, res.status]).toEqual([host, 401]);
      }
    });

    it('refuses any other name with 400, as a DNS-rebinding page would send', async () => {
      const res = await request(h.app).post('/v1/auth/register').set('Host', 'rebind.attacker.test:8000').send({ username: 'rebound', password: 'x-Secret-1' }).expect(400);
      expect(res.body).toEqual({ detail: 'Invalid Host header: this server does not answer for that name.' });
      expect(await h.uow.repositories.users.findByUsername('rebound')).toBeNull();
    });

    it('answers the probes whatever the Host', async () => {
      await request(h.app).get('/healthz').set('Host', 'controller.default.svc.cluster.local').expect(200);
    });
  });

  it('X-Request-Id is generated on every response', async () => {
    const a = await request(h.app).get('/healthz');
    const b = await request(h.app).get('/nope');
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it('a sane incoming X-Request-Id is kept, an unsafe one replaced', async () => {
    const kept = await request(h.app).get('/healthz').set('X-Request-Id', 'abc-123.proxy:7');
    expect(kept.headers['x-request-id']).toBe('abc-123.proxy:7');
    const replaced = await request(h.app).get('/healthz').set('X-Request-Id', 'a b<script>');
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('each request is logged once with its request id and status, without the query', async () => {
    await request(h.app).get('/healthz?secret=1').set('X-Request-Id', 'log-me');
    const line = h.logger.at('info').find((e) => (e.obj as { requestId?: string }).requestId === 'log-me');
    expect(line?.obj).toEqual(expect.objectContaining({ method: 'GET', path: '/healthz', status: 200 }));
  });
});

describe('Request bodies', () => {
  const h = harness();
  let alice: string;
  beforeAll(async () => {
    ({ alice } = await adminAndAlice(h.app));
  });

  it('register and login accept form-encoded bodies', async () => {
    const reg = await request(h.app).post('/v1/auth/register').type('form').send('username=bob&password=s3cret&email=bob%40example.com').expect(201);
    expect(reg.body).toEqual(expect.objectContaining({ username: 'bob', email: 'bob@example.com' }));
    const login = await request(h.app).post('/v1/auth/login').type('form').send({ username: 'bob', password: 's3cret' }).expect(200);
    expect(login.body.token).toMatch(/^[0-9a-f]{40}$/);
  });

  it('a repeated form field is a field error, not a crash', async () => {
    const res = await request(h.app).post('/v1/auth/login').type('form').send('username=a&username=b&password=x').expect(400);
    expect(res.body).toEqual({ username: ['Not a valid string.'] });
  });

  it('an empty body counts as {}', async () => {
    const res = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).expect(201);
    expect(res.body.id).toMatch(/^[a-z]+-[a-z]+$/);
    const typed = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).set('Content-Type', 'text/plain').send('');
    expect(typed.status).toBe(201);
  });

  it('the config endpoint accepts a JSON string that holds the object', async () => {
    await createApp(h.app, alice, 'strapp');
    const res = await request(h.app)
      .post('/v1/apps/strapp/config')
      .set('Authorization', auth(alice))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(JSON.stringify({ values: { FOO: 'bar' } })))
      .expect(201);
    expect(res.body.values).toEqual({ FOO: 'bar', SVC_APP: 'strapp', SVC_RELEASE: 'v2' });
  });

  it('malformed JSON is 400 with a short reason', async () => {
    const res = await request(h.app)
      .post('/v1/apps')
      .set('Authorization', auth(alice))
      .set('Content-Type', 'application/json')
      .send('{"id": "x",')
      .expect(400);
    expect(res.body.detail).toMatch(/^JSON parse error - .+/);
    expect(res.body.detail.length).toBeLessThan(160);
  });

  it('a body of another content type is 415', async () => {
    const res = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).set('Content-Type', 'text/plain').send('id=x').expect(415);
    expect(res.body).toEqual({ detail: 'Unsupported media type "text/plain" in request.' });
    const xml = await request(h.app).post('/v1/auth/login').set('Content-Type', 'application/xml').send('<a/>').expect(415);
    expect(xml.body.detail).toContain('application/xml');
  });

  it('a JSON body in another charset is 415', async () => {
    await request(h.app)
      .post('/v1/apps')
      .set('Authorization', auth(alice))
      .set('Content-Type', 'application/json; charset=utf-16')
      .send('{}')
      .expect(415);
  });

  it('an unsupported content encoding is 415', async () => {
    const res = await request(h.app)
      .post('/v1/apps')
      .set('Authorization', auth(alice))
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'compress')
      .send('{}')
      .expect(415);
    expect(res.body).toEqual({ detail: 'Unsupported content encoding.' });
  });

  it('a body over 1 MiB is 413 with a JSON detail', async () => {
    const big = JSON.stringify({ id: 'x', pad: 'a'.repeat(1024 * 1024) });
    const res = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).set('Content-Type', 'application/json').send(big);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: 'Request body too large: the limit is 1 MiB.' });
  });

  it('top-level JSON that is not an object reaches the core, which ignores it', async () => {
    const res = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).set('Content-Type', 'application/json').send('[1, 2]');
    expect(res.status).toBe(201);
  });

  it.each([
    ['a JSON value', '{"username": "al\\u0000ice", "password": "x"}', 'application/json'],
    ['a JSON key', '{"values": {"A\\u0000": "1"}}', 'application/json'],
    ['a nested JSON array', '{"x": [[["\\u0000"]]]}', 'application/json'],
    ['a form field', 'username=al%00ice&password=x', 'application/x-www-form-urlencoded'],
  ])('a NUL character in %s is 400 before any use case runs', async (_name, body, type) => {
    const res = await request(h.app).post('/v1/auth/login').set('Content-Type', type).send(body).expect(400);
    expect(res.body).toEqual({ detail: 'Null characters are not allowed.' });
  });

  it('an escaped backslash before u0000 is not a NUL character', async () => {
    const res = await request(h.app)
      .post('/v1/auth/login')
      .set('Content-Type', 'application/json')
      .send('{"username": "a\\\\u0000", "password": "x"}')
      .expect(400);
    expect(res.body).toEqual({ non_field_errors: ['Unable to log in with provided credentials.'] });
  });

  it('a huge flat JSON array is read without trouble', async () => {
    const items = new Array(400_000).fill(0).join(',');
    await request(h.app).post('/v1/auth/login').set('Content-Type', 'application/json').send(`[${items}]`).expect(400);
  });

  it('deeply nested JSON is no crash', async () => {
    const depth = 200_000;
    await request(h.app).post('/v1/auth/login').set('Content-Type', 'application/json').send('['.repeat(depth) + ']'.repeat(depth)).expect(400);
  });

  it('a config variable named __proto__ is refused instead of vanishing', async () => {
    await createApp(h.app, alice, 'protoapp');
    const res = await request(h.app)
      .post('/v1/apps/protoapp/config')
      .set('Authorization', auth(alice))
      .set('Content-Type', 'application/json')
      .send('{"values": {"__proto__": "x"}}')
      .expect(400);
    expect(res.body).toEqual({ values: ['__proto__ cannot be used as a config key.'] });
  });

  it('a JSON field named __proto__ is just a field', async () => {
    const res = await request(h.app)
      .post('/v1/auth/login')
      .set('Content-Type', 'application/json')
      .send('{"__proto__": {"username": "alice"}, "password": "x"}')
      .expect(400);
    expect(res.body).toEqual({ username: ['This field is required.'] });
  });
});

describe('Authentication', () => {
  const h = harness();
  let alice: string;
  beforeAll(async () => {
    ({ alice } = await adminAndAlice(h.app));
  });

  it('without credentials: 401, WWW-Authenticate: Token', async () => {
    const res = await request(h.app).get('/v1/apps').expect(401);
    expect(res.body).toEqual({ detail: 'Authentication credentials were not provided.' });
    expect(res.headers['www-authenticate']).toBe('Token');
  });

  it('another scheme counts as no credentials', async () => {
    const res = await request(h.app).get('/v1/apps').set('Authorization', 'Basic YTpi').expect(401);
    expect(res.body).toEqual({ detail: 'Authentication credentials were not provided.' });
  });

  it.each(['token nope', `token ${'f'.repeat(40)}`, 'token', 'token a b'])('%j is an invalid token', async (header) => {
    const res = await request(h.app).get('/v1/apps').set('Authorization', header).expect(401);
    expect(res.body).toEqual({ detail: 'Invalid token.' });
    expect(res.headers['www-authenticate']).toBe('Token');
  });

  it('the scheme is case-insensitive', async () => {
    await request(h.app).get('/v1/apps').set('Authorization', `Token ${alice}`).expect(200);
    await request(h.app).get('/v1/apps').set('Authorization', `TOKEN ${alice}`).expect(200);
  });

  it('GET /v1/ tells a controller apart: 401 without credentials, 200 {} with', async () => {
    await request(h.app).get('/v1/').expect(401);
    const res = await request(h.app).get('/v1/').set('Authorization', auth(alice)).expect(200);
    expect(res.body).toEqual({});
  });

  it('register and login need no credentials; a given register token must be valid', async () => {
    await request(h.app).post('/v1/auth/register').send({ username: 'carol', password: 'p', email: 'c@example.com' }).expect(201);
    await request(h.app)
      .post('/v1/auth/register')
      .set('Authorization', 'token bad')
      .send({ username: 'dave', password: 'p', email: 'd@example.com' })
      .expect(401);
  });

  it('admin_only registration: the first user gets in, then an administrator token registers and no token is 403', async () => {
    const closed = harness({ settings: { registrationMode: 'admin_only' } });
    // While no administrator exists, the first registration is let in and becomes one.
    const first = await request(closed.app).post('/v1/auth/register').send({ username: 'root', password: 'pw', email: 'r@example.com' }).expect(201);
    expect(first.body.is_superuser).toBe(true);
    const anonymous = await request(closed.app).post('/v1/auth/register').send({ username: 'x', password: 'p', email: 'x@example.com' }).expect(403);
    expect(anonymous.body).toEqual({ detail: 'Only administrators can register users' });
    const { token } = await closed.useCases.login.execute({ username: 'root', password: 'pw' });
    await request(closed.app)
      .post('/v1/auth/register')
      .set('Authorization', auth(token))
      .send({ username: 'x', password: 'p', email: 'x@example.com' })
      .expect(201);
  });
});

describe('Probes', () => {
  it('GET /healthz is 200 {status: ok} without credentials', async () => {
    const res = await request(harness().app).get('/healthz').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 when ready', async () => {
    const res = await request(harness({ ready: async () => true }).app).get('/readyz/').expect(200);
    expect(res.body).toEqual({ status: 'ready' });
  });

  it('GET /readyz is 503 when not ready, and when the check itself fails', async () => {
    const down = await request(harness({ ready: async () => false }).app).get('/readyz').expect(503);
    expect(down.body).toEqual({ detail: 'The database is not available.' });
    const failing = harness({
      ready: async () => {
        throw new Error('connection refused');
      },
    });
    const res = await request(failing.app).get('/readyz').expect(503);
    expect(JSON.stringify(res.body)).not.toContain('refused');
  });
});

describe('Unexpected errors', () => {
  it('a 500 hides the internals, carries the request id, and is logged with the stack', async () => {
    const h = harness({
      override: () => ({
        listApps: {
          execute: async () => {
            throw new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');
          },
        } as unknown as ListApps,
      }),
    });
    const token = await signUp(h.app, 'alice');
    const res = await request(h.app).get('/v1/apps').set('Authorization', auth(token)).expect(500);
    const requestId = res.headers['x-request-id'];
    expect(requestId).toBeDefined();
    expect(res.body).toEqual({ detail: 'Internal server error.', request_id: requestId });
    expect(res.text).not.toMatch(/ECONNREFUSED|hunter2|at /);
    const logged = h.logger.at('error');
    expect(logged).toHaveLength(1);
    expect(logged[0]?.obj).toEqual(
      expect.objectContaining({ requestId, err: expect.objectContaining({ stack: expect.stringContaining('ECONNREFUSED') }) }),
    );
  });
});
