import {
  ISO_MILLIS,
  TOKEN,
  describeEachBackend,
  expectDetail,
  expectFieldErrors,
  expectNoContent,
  expectNotFound,
  expectPage,
  expectUnauthenticated,
  expectUnique,
  login,
  register,
  signUp,
  startTestServer,
  useServer,
  type AdminJson,
  type ApiClient,
  type AppJson,
  type Session,
  type UserJson,
} from './support';
import { rsaPair } from './support/certs';
import { ed25519PublicKey } from './support/ssh-keys';

const USER_FIELDS = [
  'date_joined',
  'email',
  'first_name',
  'groups',
  'id',
  'is_active',
  'is_staff',
  'is_superuser',
  'last_login',
  'last_name',
  'user_permissions',
  'username',
];

describeEachBackend('accounts', (backend) => {
  const server = useServer(backend);
  let admin: Session;

  beforeAll(async () => {
    admin = await signUp(server.api, 'root');
  });

  /** The caller behind a token, learnt from the owner of an app it creates (then deleted). */
  async function whoIs(token: string): Promise<string> {
    const api = server.api.as(token);
    const created = await api.post<AppJson>('/v1/apps/', {});
    expect(created.status).toBe(201);
    expectNoContent(await api.delete(`/v1/apps/${created.body.id}/`));
    return created.body.owner;
  }

  describe('POST /v1/auth/register/', () => {
    it('makes the first user an administrator and answers the User JSON with exactly the seed fields', () => {
      expect(Object.keys(admin.user).sort()).toEqual(USER_FIELDS);
      expect(admin.user).toMatchObject({
        username: 'root',
        email: 'root@example.com',
        first_name: '',
        last_name: '',
        is_superuser: true,
        is_staff: true,
        is_active: true,
        last_login: null,
        groups: [],
        user_permissions: [],
      });
      expect(Number.isInteger(admin.user.id)).toBe(true);
      expect(admin.user.date_joined).toMatch(ISO_MILLIS);
    });

    it('registers later users as ordinary users, ignoring is_superuser and is_staff in the body', async () => {
      const res = await server.api.post<UserJson>('/v1/auth/register/', {
        username: 'mallory',
        password: 'pw',
        email: 'mallory@example.com',
        first_name: 'Mal',
        last_name: 'Lory',
        is_superuser: true,
        is_staff: true,
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ username: 'mallory', is_superuser: false, is_staff: false, first_name: 'Mal', last_name: 'Lory' });
      expect(res.text).not.toContain('"password"');
      expect(res.text).not.toContain('pw"');
    });

    it('accepts a form-encoded body, as old clients send', async () => {
      const res = await server.api.request<UserJson>('POST', '/v1/auth/register', {
        form: { username: 'formy', password: 'pw', email: 'formy@example.com' },
      });
      expect(res.status).toBe(201);
      expect(res.body.username).toBe('formy');
      expect(await login(server.api, 'formy', 'pw')).toMatch(TOKEN);
    });

    it('reports every missing field at once', async () => {
      expectFieldErrors(await server.api.post('/v1/auth/register/', {}), ['username', 'password', 'email']);
    });

    it.each([
      ['a username with a space', { username: 'bad name' }, ['username']],
      ['a username of 65 characters', { username: 'u'.repeat(65) }, ['username']],
      ['an email without @', { email: 'not-an-email' }, ['email']],
      ['a first name of 65 characters', { first_name: 'f'.repeat(65) }, ['first_name']],
      ['a last name of 65 characters', { last_name: 'l'.repeat(65) }, ['last_name']],
      ['a password of 129 characters', { password: 'p'.repeat(129) }, ['password']],
      ['a number as username', { username: 42 }, ['username']],
    ])('refuses %s with 400 on that field', async (_what, override, fields) => {
      const body = { username: 'valid.user+1@x', password: 'pw', email: 'valid@example.com', ...override };
      expectFieldErrors(await server.api.post('/v1/auth/register/', body), fields as string[]);
    });

    it('accepts the full username alphabet up to 64 characters', async () => {
      const username = `a.b@c+d-e_f${'x'.repeat(53)}`;
      expect(username).toHaveLength(64);
      expect((await register(server.api, username, 'pw', { email: 'alphabet@example.com' })).username).toBe(username);
    });

    it('refuses a taken username with 400 This field must be unique.', async () => {
      expectUnique(await server.api.post('/v1/auth/register/', { username: 'root', password: 'x', email: 'x@example.com' }), 'username');
    });
  });

  describe('POST /v1/auth/login/', () => {
    let dora: Session;
    beforeAll(async () => {
      dora = await signUp(server.api, 'dora');
    });

    it('mints a new 40-hex token per login; every one works, and last_login is set', async () => {
      const second = await login(server.api, 'dora', dora.password);
      expect(second).toMatch(TOKEN);
      expect(second).not.toBe(dora.token);
      expect((await server.api.as(dora.token).get('/v1/')).status).toBe(200);
      expect((await server.api.as(second).get('/v1/')).status).toBe(200);
      const users = expectPage<UserJson>(await admin.api.get('/v1/users/?page_size=1000'));
      const record = users.results.find((u) => u.username === 'dora');
      expect(record?.last_login).toMatch(ISO_MILLIS);
    });

    it('accepts a form-encoded body', async () => {
      const res = await server.api.request<{ token: string }>('POST', '/v1/auth/login/', { form: { username: 'dora', password: dora.password } });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['token']);
    });

    it('answers a wrong password and an unknown user identically', async () => {
      const wrong = await server.api.post('/v1/auth/login/', { username: 'dora', password: 'nope' });
      const unknown = await server.api.post('/v1/auth/login/', { username: 'nobody-here', password: 'nope' });
      for (const res of [wrong, unknown]) {
        expect({ status: res.status, body: res.body }).toEqual({
          status: 400,
          body: { non_field_errors: ['Unable to log in with provided credentials.'] },
        });
      }
    });

    it('reports a missing field on that field', async () => {
      expectFieldErrors(await server.api.post('/v1/auth/login/', { username: 'dora' }), ['password']);
      expectFieldErrors(await server.api.post('/v1/auth/login/', {}), ['username', 'password']);
    });

    it('throttles a username after 10 failures: 429 with a numeric Retry-After, even for the right password', async () => {
      const victim = await signUp(server.api, 'victim');
      for (let i = 0; i < 10; i++) {
        const res = await server.api.post('/v1/auth/login/', { username: 'victim', password: `wrong-${i}` });
        expect(res.status).toBe(400);
      }
      for (const password of ['wrong-again', victim.password]) {
        const res = await server.api.post('/v1/auth/login/', { username: 'victim', password });
        expectDetail(res, 429);
        const retryAfter = res.headers.get('retry-after');
        expect(retryAfter).toMatch(/^[0-9]+$/);
        expect(Number(retryAfter)).toBeGreaterThan(0);
        expect(Number(retryAfter)).toBeLessThanOrEqual(15 * 60);
      }
      // Another username is not affected, and the victim's existing token still works.
      expect(await login(server.api, 'dora', dora.password)).toMatch(TOKEN);
      expect((await victim.api.get('/v1/')).status).toBe(200);
    });
  });

  describe('authentication', () => {
    it('answers 401 with WWW-Authenticate: Token without credentials, with a bad token, or another scheme', async () => {
      expectUnauthenticated(await server.api.get('/v1/apps'));
      expectUnauthenticated(await server.api.as('0'.repeat(40)).get('/v1/apps'));
      expectUnauthenticated(await server.api.as('not-a-token').get('/v1/apps'));
      expectUnauthenticated(await server.api.get('/v1/apps', { headers: { Authorization: `Bearer ${admin.token}` } }));
      expectUnauthenticated(await server.api.get('/v1/apps', { headers: { Authorization: 'token' } }));
    });

    it('accepts the token scheme in any case', async () => {
      for (const scheme of ['token', 'Token', 'TOKEN']) {
        const res = await server.api.get('/v1/apps', { token: null, headers: { Authorization: `${scheme} ${admin.token}` } });
        expect(res.status).toBe(200);
      }
    });

    it('GET /v1/ is 401 without credentials and 200 {} with a valid token', async () => {
      expectUnauthenticated(await server.api.get('/v1/'));
      const res = await admin.api.get('/v1/');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: {} });
      expect((await admin.api.get('/v1')).status).toBe(200);
    });
  });

  describe('POST /v1/auth/tokens/ (1.5)', () => {
    let erin: Session;
    let frank: Session;
    beforeAll(async () => {
      erin = await signUp(server.api, 'erin');
      frank = await signUp(server.api, 'frank');
    });

    it('does not exist before 1.5', async () => {
      expectNotFound(await erin.api.at('1.4').post('/v1/auth/tokens/'));
      expect((await erin.api.get('/v1/')).status).toBe(200);
    });

    it('without a body revokes all of the caller\'s tokens and returns a new one', async () => {
      const other = await login(server.api, 'erin', erin.password);
      const res = await erin.api.post<{ token: string }>('/v1/auth/tokens/');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['token']);
      expect(res.body.token).toMatch(TOKEN);
      expectUnauthenticated(await erin.api.get('/v1/'));
      expectUnauthenticated(await server.api.as(other).get('/v1/'));
      expect(await whoIs(res.body.token)).toBe('erin');
      erin = { ...erin, token: res.body.token, api: server.api.as(res.body.token) };
    });

    it('refuses username and all to non-administrators with 403', async () => {
      expectDetail(await erin.api.post('/v1/auth/tokens/', { username: 'frank' }), 403);
      expectDetail(await erin.api.post('/v1/auth/tokens/', { all: 'true' }), 403);
      expect((await frank.api.get('/v1/')).status).toBe(200);
      expect((await erin.api.get('/v1/')).status).toBe(200);
    });

    it('lets an administrator regenerate another user\'s token; 404 for an unknown user', async () => {
      const res = await admin.api.post<{ token: string }>('/v1/auth/tokens/', { username: 'frank' });
      expect(res.status).toBe(200);
      expectUnauthenticated(await frank.api.get('/v1/'));
      expect(await whoIs(res.body.token)).toBe('frank');
      expect((await admin.api.get('/v1/')).status).toBe(200);
      frank = { ...frank, token: res.body.token, api: server.api.as(res.body.token) };
      expectDetail(await admin.api.post('/v1/auth/tokens/', { username: 'no-such-user' }), 404);
    });

    it('all=true revokes every user\'s tokens, the caller\'s too, and returns the caller a new one', async () => {
      const res = await admin.api.post<{ token: string }>('/v1/auth/tokens/', { all: 'true' });
      expect(res.status).toBe(200);
      for (const api of [admin.api, erin.api, frank.api]) expectUnauthenticated(await api.get('/v1/'));
      expect(await whoIs(res.body.token)).toBe('root');
      admin = { ...admin, token: res.body.token, api: server.api.as(res.body.token) };
      erin = { ...erin, token: await login(server.api, 'erin', erin.password) };
      erin.api = server.api.as(erin.token);
    });
  });

  describe('POST /v1/auth/passwd/ (1.4)', () => {
    let gina: Session;
    beforeAll(async () => {
      gina = await signUp(server.api, 'gina');
    });

    it('does not exist before 1.4', async () => {
      expectNotFound(await gina.api.at('1.3').post('/v1/auth/passwd/', { password: gina.password, new_password: 'x' }));
    });

    it('changes the caller\'s password: 200 with an empty body, other tokens revoked, this one kept', async () => {
      const other = await login(server.api, 'gina', gina.password);
      const res = await gina.api.post('/v1/auth/passwd/', { password: gina.password, new_password: 'gina-New-2' });
      expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: '' });
      expect((await gina.api.get('/v1/')).status).toBe(200);
      expectUnauthenticated(await server.api.as(other).get('/v1/'));
      expect((await server.api.post('/v1/auth/login/', { username: 'gina', password: gina.password })).status).toBe(400);
      expect(await login(server.api, 'gina', 'gina-New-2')).toMatch(TOKEN);
      gina.password = 'gina-New-2';
    });

    it('refuses a wrong current password with 400 detail, and missing fields on the fields', async () => {
      expectDetail(
        await gina.api.post('/v1/auth/passwd/', { password: 'wrong', new_password: 'x' }),
        400,
        'Current password does not match',
      );
      expectFieldErrors(await gina.api.post('/v1/auth/passwd/', { password: gina.password }), ['new_password']);
      expectFieldErrors(await gina.api.post('/v1/auth/passwd/', {}), ['password', 'new_password']);
      expect(await login(server.api, 'gina', gina.password)).toMatch(TOKEN);
    });

    it('refuses username to a non-administrator with 403', async () => {
      expectDetail(await gina.api.post('/v1/auth/passwd/', { username: 'root', password: gina.password, new_password: 'x' }), 403);
    });

    it('needs the administrator\'s own password for another user before 1.6, not from 1.6', async () => {
      const henry = await signUp(server.api, 'henry');
      for (const version of ['1.4', '1.5']) {
        expectFieldErrors(await admin.api.at(version).post('/v1/auth/passwd/', { username: 'henry', new_password: 'h2' }), ['password']);
        expectDetail(
          await admin.api.at(version).post('/v1/auth/passwd/', { username: 'henry', password: 'wrong', new_password: 'h2' }),
          400,
          'Current password does not match',
        );
      }
      const withPassword = await admin.api.at('1.4').post('/v1/auth/passwd/', { username: 'henry', password: admin.password, new_password: 'h-14' });
      expect({ status: withPassword.status, text: withPassword.text }).toEqual({ status: 200, text: '' });
      expectUnauthenticated(await henry.api.get('/v1/'));
      expect(await login(server.api, 'henry', 'h-14')).toMatch(TOKEN);

      const without = await admin.api.at('1.6').post('/v1/auth/passwd/', { username: 'henry', new_password: 'h-16' });
      expect(without.status).toBe(200);
      expect(await login(server.api, 'henry', 'h-16')).toMatch(TOKEN);
      expect((await admin.api.get('/v1/')).status).toBe(200);
    });

    it('answers 404 when an administrator names an unknown user', async () => {
      expectDetail(await admin.api.post('/v1/auth/passwd/', { username: 'nobody-at-all', new_password: 'x' }), 404);
    });
  });

  describe('DELETE /v1/auth/cancel/', () => {
    it('deletes the caller\'s own account: 204, then the token and the password no longer work', async () => {
      const ivan = await signUp(server.api, 'ivan');
      expectNoContent(await ivan.api.delete('/v1/auth/cancel/'));
      expectUnauthenticated(await ivan.api.get('/v1/'));
      expect((await server.api.post('/v1/auth/login/', { username: 'ivan', password: ivan.password })).status).toBe(400);
    });

    it('refuses a non-administrator naming another user with 403', async () => {
      const jane = await signUp(server.api, 'jane');
      expectDetail(await jane.api.delete('/v1/auth/cancel/', { json: { username: 'root' } }), 403);
    });

    it('needs the administrator\'s own password before 1.6 and not from 1.6', async () => {
      await register(server.api, 'kim');
      await register(server.api, 'lee');
      expectFieldErrors(await admin.api.at('1.5').delete('/v1/auth/cancel/', { json: { username: 'kim' } }), ['password']);
      expectDetail(await admin.api.at('1.5').delete('/v1/auth/cancel/', { json: { username: 'kim', password: 'wrong' } }), 400);
      expectNoContent(await admin.api.at('1.5').delete('/v1/auth/cancel/', { json: { username: 'kim', password: admin.password } }));
      expectNoContent(await admin.api.at('1.6').delete('/v1/auth/cancel/', { json: { username: 'lee' } }));
      const users = expectPage<UserJson>(await admin.api.get('/v1/users/?page_size=1000'));
      expect(users.results.map((u) => u.username)).not.toEqual(expect.arrayContaining(['kim']));
      expect(users.results.map((u) => u.username)).not.toContain('lee');
      expect((await admin.api.get('/v1/')).status).toBe(200);
    });

    it('answers 404 for an unknown user', async () => {
      expectDetail(await admin.api.delete('/v1/auth/cancel/', { json: { username: 'nobody-else' } }), 404);
    });

    it('refuses to delete a user who still owns applications with 409', async () => {
      const owner = await signUp(server.api, 'owner1');
      const app = await owner.api.post<AppJson>('/v1/apps/', { id: 'owned-by-owner1' });
      expect(app.status).toBe(201);
      const expected = 'owner1 still owns applications; delete or transfer them first';
      expectDetail(await owner.api.delete('/v1/auth/cancel/'), 409, expected);
      expectDetail(await admin.api.delete('/v1/auth/cancel/', { json: { username: 'owner1' } }), 409, expected);
      expect((await owner.api.get('/v1/apps/owned-by-owner1/')).status).toBe(200);
      expectNoContent(await owner.api.delete('/v1/apps/owned-by-owner1/'));
      expectNoContent(await owner.api.delete('/v1/auth/cancel/'));
    });

    it('takes the user\'s keys, certificates and app permissions with the account', async () => {
      const mia = await signUp(server.api, 'mia');
      const material = ed25519PublicKey('mia@example.com');
      expect((await mia.api.post('/v1/keys/', { id: 'laptop', public: material })).status).toBe(201);
      expect((await admin.api.post('/v1/apps/', { id: 'shared-with-mia' })).status).toBe(201);
      expect((await admin.api.post('/v1/apps/shared-with-mia/domains/', { domain: 'mia.example.com' })).status).toBe(201);
      expect((await admin.api.post('/v1/apps/shared-with-mia/perms/', { username: 'mia' })).status).toBe(201);
      // A collaborator may upload a certificate for the app's domain.
      expect((await mia.api.post('/v1/certs/', rsaPair({ commonName: 'mia.example.com' }))).status).toBe(201);
      expectNoContent(await mia.api.delete('/v1/auth/cancel/'));
      const perms = await admin.api.get<{ users: string[] }>('/v1/apps/shared-with-mia/perms/');
      expect(perms.body).toEqual({ users: [] });
      // The key material is free again.
      expect((await admin.api.post('/v1/keys/', { id: 'was-mias', public: material })).status).toBe(201);
      expectNoContent(await admin.api.delete('/v1/keys/was-mias'));
      expectDetail(await admin.api.get('/v1/certs/mia.example.com'), 404);
      expect((await admin.api.post('/v1/certs/', rsaPair({ commonName: 'mia.example.com' }))).status).toBe(201);
      expectNoContent(await admin.api.delete('/v1/apps/shared-with-mia/'));
    });
  });

  describe('GET /v1/users/ (1.3)', () => {
    it('does not exist before 1.3', async () => {
      expectNotFound(await admin.api.at('1.2').get('/v1/users/'));
    });

    it('is for administrators only', async () => {
      const nina = await signUp(server.api, 'nina');
      expectDetail(await nina.api.get('/v1/users/'), 403);
    });

    it('lists every user as User JSON, paginated', async () => {
      const page = expectPage<UserJson>(await admin.api.at('1.3').get('/v1/users'));
      expect(page.count).toBeGreaterThanOrEqual(5);
      expect(page.results.map((u) => u.username)).toEqual(expect.arrayContaining(['root', 'dora', 'mallory']));
      for (const user of page.results) expect(Object.keys(user).sort()).toEqual(USER_FIELDS);
      expect(page.results.find((u) => u.username === 'root')?.is_superuser).toBe(true);
    });
  });

  describe('/v1/admin/perms', () => {
    let olga: Session;
    beforeAll(async () => {
      olga = await signUp(server.api, 'olga');
    });

    it('is for administrators only', async () => {
      expectDetail(await olga.api.get('/v1/admin/perms/'), 403);
      expectDetail(await olga.api.post('/v1/admin/perms/', { username: 'olga' }), 403);
      expectDetail(await olga.api.delete('/v1/admin/perms/root'), 403);
    });

    it('lists administrators as {username, is_superuser}', async () => {
      const page = expectPage<AdminJson>(await admin.api.get('/v1/admin/perms'));
      expect(page.results).toEqual([{ username: 'root', is_superuser: true }]);
    });

    it('grants with 201 and an empty body; the new administrator can then use admin endpoints', async () => {
      const res = await admin.api.post('/v1/admin/perms', { username: 'olga' });
      expect({ status: res.status, text: res.text }).toEqual({ status: 201, text: '' });
      expect((await olga.api.get('/v1/users/')).status).toBe(200);
      const page = expectPage<AdminJson>(await admin.api.get('/v1/admin/perms/'));
      expect(page.results).toEqual(expect.arrayContaining([{ username: 'olga', is_superuser: true }]));
    });

    it('refuses an unknown or missing username', async () => {
      expectDetail(await admin.api.post('/v1/admin/perms/', { username: 'nobody-x' }), 404);
      expectFieldErrors(await admin.api.post('/v1/admin/perms/', {}), ['username']);
    });

    it('revokes with 204 and refuses to revoke the last administrator with 409', async () => {
      expectNoContent(await admin.api.delete('/v1/admin/perms/olga'));
      expectDetail(await olga.api.get('/v1/users/'), 403);
      expectDetail(await admin.api.delete('/v1/admin/perms/root/'), 409);
      expectDetail(await admin.api.delete('/v1/admin/perms/nobody-x'), 404);
      expect((await admin.api.get('/v1/users/')).status).toBe(200);
    });
  });
});

describeEachBackend('registration modes', (backend) => {
  it('disabled: 403 "Registration is disabled"; admin_only: only an administrator\'s token may register', async () => {
    const store = await backend.newStore();
    let server = await startTestServer(store);
    try {
      const admin = await signUp(server.api, 'boss');
      await server.close();

      server = await startTestServer(store, { REGISTRATION_MODE: 'disabled' });
      expectDetail(await server.api.post('/v1/auth/register/', { username: 'x1', password: 'p', email: 'x1@example.com' }), 403, 'Registration is disabled');

      await server.close();
      server = await startTestServer(store, { REGISTRATION_MODE: 'admin_only' });
      const body = { username: 'x2', password: 'p', email: 'x2@example.com' };
      expectDetail(await server.api.post('/v1/auth/register/', body), 403);
      const bossToken = await login(server.api, 'boss', admin.password);
      const plain = await signUpWith(server.api.as(bossToken), 'x3');
      expectDetail(await server.api.as(plain).post('/v1/auth/register/', body), 403);
      const created = await server.api.as(bossToken).post<UserJson>('/v1/auth/register/', body);
      expect(created.status).toBe(201);
      expect(created.body.is_superuser).toBe(false);
    } finally {
      await server.close();
    }
  });

  it('TOKEN_TTL_SECONDS: a token stops working once it is older than the lifetime', async () => {
    const server = await startTestServer(await backend.newStore(), { TOKEN_TTL_SECONDS: '1' });
    try {
      const user = await signUp(server.api, 'shortlived');
      expect((await user.api.get('/v1/')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expectUnauthenticated(await user.api.get('/v1/'));
      expect((await server.api.as(await login(server.api, 'shortlived', user.password)).get('/v1/')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  /** Registers through an administrator's client, then logs the new user in. */
  async function signUpWith(api: ApiClient, username: string): Promise<string> {
    const res = await api.post('/v1/auth/register/', { username, password: 'pw', email: `${username}@example.com` });
    expect(res.status).toBe(201);
    return login(api.as(null), username, 'pw');
  }
});
