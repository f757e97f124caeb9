import request from 'supertest';
import { adminAndAlice, auth, createApp, deploy, harness, signUp } from './harness';

describe('Error statuses and bodies', () => {
  const h = harness();
  let root: string;
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    ({ root, alice } = await adminAndAlice(h.app));
    bob = await signUp(h.app, 'bob');
    await createApp(h.app, alice, 'myapp');
  });

  const as = (token: string, version = '1.7') => ({
    get: (path: string) => request(h.app).get(path).set('Authorization', auth(token)).set('SVC_API_VERSION', version),
    post: (path: string) => request(h.app).post(path).set('Authorization', auth(token)).set('SVC_API_VERSION', version),
    delete: (path: string) => request(h.app).delete(path).set('Authorization', auth(token)).set('SVC_API_VERSION', version),
  });

  it('400 field validation reports every failing field', async () => {
    const res = await request(h.app).post('/v1/auth/register').send({ username: 'bad name!', email: 'nope' }).expect(400);
    expect(res.body).toEqual({
      username: [expect.stringContaining('Enter a valid username')],
      password: ['This field is required.'],
      email: ['Enter a valid email address.'],
    });
  });

  it('400 for a duplicate is the unique message on the field', async () => {
    const res = await as(alice).post('/v1/apps').send({ id: 'myapp' }).expect(400);
    expect(res.body).toEqual({ id: ['This field must be unique.'] });
  });

  it('400 field errors stay objects at 1.0', async () => {
    const res = await as(alice, '1.0').post('/v1/apps').send({ id: 'Not Valid' }).expect(400);
    expect(res.body).toEqual({ id: [expect.stringContaining('App IDs can only contain')] });
  });

  it('400 business error is {detail} from 1.1', async () => {
    const res = await as(alice, '1.1').post('/v1/apps/myapp/scale').send({ web: 1 }).expect(400);
    expect(res.body).toEqual({ detail: 'No build associated with this release' });
  });

  it('400 business error is a bare JSON string at 1.0', async () => {
    const res = await as(alice, '1.0').post('/v1/apps/myapp/scale').send({ web: 1 }).expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).toBe('"No build associated with this release"');
  });

  it('400 wrong current password on change-password', async () => {
    const res = await as(alice).post('/v1/auth/passwd').send({ password: 'wrong', new_password: 'x' }).expect(400);
    expect(res.body).toEqual({ detail: 'Current password does not match' });
  });

  it('400 wrong credentials on login', async () => {
    const res = await request(h.app).post('/v1/auth/login').send({ username: 'alice', password: 'nope' }).expect(400);
    expect(res.body).toEqual({ non_field_errors: ['Unable to log in with provided credentials.'] });
  });

  it('403 for a non-administrator on an administrator endpoint', async () => {
    const res = await as(alice).get('/v1/users').expect(403);
    expect(res.body).toEqual({ detail: 'You do not have permission to perform this action.' });
    await as(alice).post('/v1/admin/perms').send({ username: 'bob' }).expect(403);
  });

  it('403 for registration while it is disabled', async () => {
    const closed = harness({ settings: { registrationMode: 'disabled' } });
    const res = await request(closed.app).post('/v1/auth/register').send({ username: 'x', password: 'p', email: 'x@example.com' }).expect(403);
    expect(res.body).toEqual({ detail: 'Registration is disabled' });
  });

  it('from 1.1 an app the caller may not see answers exactly like one that does not exist', async () => {
    for (const version of ['1.1', '1.7']) {
      const hidden = await as(bob, version).get('/v1/apps/myapp');
      const absent = await as(bob, version).get('/v1/apps/nosuchapp');
      expect([hidden.status, hidden.body]).toEqual([404, { detail: 'Not found.' }]);
      expect([absent.status, absent.body]).toEqual([404, { detail: 'Not found.' }]);
      const modify = await as(bob, version).post('/v1/apps/myapp/config').send({ values: { A: '1' } });
      expect([modify.status, modify.body]).toEqual([404, { detail: 'Not found.' }]);
    }
  });

  it('at 1.0 an app the caller may not see is 403', async () => {
    const res = await as(bob, '1.0').get('/v1/apps/myapp').expect(403);
    expect(res.body).toEqual({ detail: 'You do not have permission to perform this action.' });
    await as(bob, '1.0').get('/v1/apps/nosuchapp').expect(404, { detail: 'Not found.' });
  });

  it('403 for a collaborator deleting the app', async () => {
    await as(alice).post('/v1/apps/myapp/perms').send({ username: 'bob' }).expect(201);
    try {
      const res = await as(bob).delete('/v1/apps/myapp').expect(403);
      expect(res.body).toEqual({ detail: 'Only the owner of the application or an administrator may do this.' });
    } finally {
      await as(alice).delete('/v1/apps/myapp/perms/bob').expect(204);
    }
  });

  it('404 for an unknown release and an unknown domain', async () => {
    const res = await as(alice).get('/v1/apps/myapp/releases/v9').expect(404);
    expect(res.body).toEqual({ detail: 'Release v9 not found.' });
    await as(alice).delete('/v1/apps/myapp/domains/nope.example.com').expect(404);
  });

  it('409 when a user who owns apps cancels the account', async () => {
    const res = await as(alice).delete('/v1/auth/cancel').expect(409);
    expect(res.body).toEqual({ detail: 'alice still owns applications; delete or transfer them first' });
  });

  it('409 when the last administrator is revoked', async () => {
    const res = await as(root).delete('/v1/admin/perms/root').expect(409);
    expect(res.body).toEqual({ detail: 'The last administrator cannot be revoked.' });
  });

  it('429 with Retry-After after too many failed logins, even with the right password', async () => {
    const t = harness();
    await signUp(t.app, 'carol', 'right');
    for (let i = 0; i < 10; i++) {
      await request(t.app).post('/v1/auth/login').send({ username: 'carol', password: 'wrong' }).expect(400);
    }
    t.clock.advanceSeconds(10);
    const res = await request(t.app).post('/v1/auth/login').send({ username: 'carol', password: 'right' }).expect(429);
    // The first wait after the free failures is 30 s from the last one.
    expect(res.headers['retry-after']).toBe('20');
    expect(res.body).toEqual({ detail: expect.stringContaining('throttled') });
  });

  describe('503 when the scheduler fails', () => {
    it('is {detail} from 1.1 and changes nothing', async () => {
      const t = harness();
      const { alice: owner } = await adminAndAlice(t.app);
      await createApp(t.app, owner, 'app503');
      t.scheduler.failStarts(1);
      const res = await request(t.app)
        .post('/v1/apps/app503/builds')
        .set('Authorization', auth(owner))
        .send({ image: 'example/web:1', procfile: { web: 'serve' } })
        .expect(503);
      expect(res.body).toEqual({ detail: expect.stringContaining('The scheduler failed to start app503 web.1') });
      expect(res.headers['x-svc-release']).toBeUndefined();
      const releases = await request(t.app).get('/v1/apps/app503/releases').set('Authorization', auth(owner)).expect(200);
      expect(releases.body.count).toBe(1);
      expect(t.logger.at('warn')).toEqual([expect.objectContaining({ msg: 'dependency unavailable' })]);
    });

    it('is a bare string at 1.0', async () => {
      const t = harness();
      const { alice: owner } = await adminAndAlice(t.app);
      await createApp(t.app, owner, 'app503');
      await deploy(t.app, owner, 'app503');
      t.scheduler.failRuns(1);
      const res = await request(t.app)
        .post('/v1/apps/app503/run')
        .set('Authorization', auth(owner))
        .set('SVC_API_VERSION', '1.0')
        .send({ command: 'ls' })
        .expect(503);
      expect(typeof res.body).toBe('string');
      expect(res.body).toContain('The scheduler failed to run the command');
    });
  });
});
