import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { fakeCertificatePem, fakePrivateKeyPem } from '@svc/core/testing';
import { PLATFORM_VERSION, adminAndAlice, auth, createApp, deploy, harness } from './harness';

const VERSION_HEADERS = [
  'svc_api_version',
  'svc_platform_version',
  'x_svc_api_version',
  'x_svc_platform_version',
  'deis_api_version',
  'deis_platform_version',
];

function versionHeadersOf(headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(VERSION_HEADERS.filter((h) => h in headers).map((h) => [h, headers[h]]));
}

describe('API version selection', () => {
  const h = harness();
  let root: string;
  beforeAll(async () => {
    ({ root } = await adminAndAlice(h.app));
  });

  it.each([
    ['1.0', {}],
    ['1.1', { x_svc_api_version: '1.1', x_svc_platform_version: PLATFORM_VERSION }],
    ['1.3', { x_svc_api_version: '1.3', x_svc_platform_version: PLATFORM_VERSION }],
    [
      '1.4',
      {
        svc_api_version: '1.4',
        svc_platform_version: PLATFORM_VERSION,
        x_svc_api_version: '1.4',
        x_svc_platform_version: PLATFORM_VERSION,
        deis_api_version: '1.4',
        deis_platform_version: PLATFORM_VERSION,
      },
    ],
    [
      '1.7',
      {
        svc_api_version: '1.7',
        svc_platform_version: PLATFORM_VERSION,
        x_svc_api_version: '1.7',
        x_svc_platform_version: PLATFORM_VERSION,
        deis_api_version: '1.7',
        deis_platform_version: PLATFORM_VERSION,
      },
    ],
  ])('version %s sends exactly its version headers', async (version, expected) => {
    const res = await request(h.app).get('/v1/apps').set('Authorization', auth(root)).set('SVC_API_VERSION', version).expect(200);
    expect(versionHeadersOf(res.headers)).toEqual(expected);
  });

  it.each(['SVC_API_VERSION', 'Svc-Api-Version', 'X_SVC_API_VERSION'])('version is selected by the %s request header', async (name) => {
    const res = await request(h.app).get('/v1/apps').set('Authorization', auth(root)).set(name, '1.2').expect(200);
    expect(versionHeadersOf(res.headers)).toEqual({ x_svc_api_version: '1.2', x_svc_platform_version: PLATFORM_VERSION });
  });

  it('without a version header the server default (1.7) applies', async () => {
    const res = await request(h.app).get('/v1/apps').set('Authorization', auth(root)).expect(200);
    expect(res.headers.svc_api_version).toBe('1.7');
  });

  it('an operator-pinned default version applies to requests that choose none', async () => {
    const pinned = harness({ defaultVersion: '1.3' });
    const res = await request(pinned.app).get('/healthz').expect(200);
    expect(versionHeadersOf(res.headers)).toEqual({ x_svc_api_version: '1.3', x_svc_platform_version: PLATFORM_VERSION });
  });

  it('version headers are on error responses and unknown paths too', async () => {
    const unauthenticated = await request(h.app).get('/v1/apps').set('SVC_API_VERSION', '1.2').expect(401);
    expect(unauthenticated.headers.x_svc_api_version).toBe('1.2');
    const unknown = await request(h.app).get('/nowhere').set('SVC_API_VERSION', '1.5').expect(404);
    expect(unknown.headers.svc_api_version).toBe('1.5');
    expect(unknown.headers.x_svc_api_version).toBe('1.5');
  });

  it.each(['2.0', '1.8', 'abc', '1', ''])('an unsupported version %j answers 406 with the default version headers', async (version) => {
    const res = await request(h.app).get('/v1/apps').set('Authorization', auth(root)).set('SVC_API_VERSION', version).expect(406);
    expect(res.body).toEqual({ detail: `Unsupported API version: ${version}` });
    expect(res.headers.svc_api_version).toBe('1.7');
  });

  it.each(['Svc-Version', 'X-Svc-Version'])('a client of another major version (%s) answers 405 with the default version headers', async (name) => {
    const res = await request(h.app)
      .get('/v1/apps')
      .set('Authorization', auth(root))
      .set('SVC_API_VERSION', '1.2')
      .set(name, '2.0')
      .expect(405);
    expect(res.body).toEqual({ detail: 'Client and server versions do not match. Client version: 2.0 Server version: 1' });
    expect(versionHeadersOf(res.headers)).toEqual({
      svc_api_version: '1.7',
      svc_platform_version: PLATFORM_VERSION,
      x_svc_api_version: '1.7',
      x_svc_platform_version: PLATFORM_VERSION,
      deis_api_version: '1.7',
      deis_platform_version: PLATFORM_VERSION,
    });
  });

  it('a client of the same major version is served', async () => {
    await request(h.app).get('/v1/apps').set('Authorization', auth(root)).set('Svc-Version', '1.9.3').expect(200);
  });

  it('header names with underscores go on the wire literally, in their case', async () => {
    const server = h.app.listen(0);
    try {
      const { port } = server.address() as AddressInfo;
      const raw = await new Promise<string[]>((resolve, reject) => {
        http
          .get({ port, path: '/healthz', headers: { SVC_API_VERSION: '1.4' } }, (res) => {
            res.resume();
            resolve(res.rawHeaders.filter((_, i) => i % 2 === 0));
          })
          .on('error', reject);
      });
      expect(raw).toEqual(
        expect.arrayContaining([
          'SVC_API_VERSION',
          'SVC_PLATFORM_VERSION',
          'X_SVC_API_VERSION',
          'X_SVC_PLATFORM_VERSION',
          'DEIS_API_VERSION',
          'DEIS_PLATFORM_VERSION',
        ]),
      );
    } finally {
      server.close();
    }
  });
});

describe('Release headers', () => {
  it.each([
    ['1.3', { 'x-svc-release': '2' }],
    ['1.4', { 'svc-release': '2', 'x-svc-release': '2' }],
  ])('config POST at %s announces the new release under the version’s names', async (version, expected) => {
    const h = harness();
    const { alice } = await adminAndAlice(h.app);
    await createApp(h.app, alice, 'myapp');
    const res = await request(h.app)
      .post('/v1/apps/myapp/config')
      .set('Authorization', auth(alice))
      .set('SVC_API_VERSION', version)
      .send({ values: { FOO: 'bar' } })
      .expect(201);
    expect({ 'svc-release': res.headers['svc-release'], 'x-svc-release': res.headers['x-svc-release'] }).toEqual({
      'svc-release': undefined,
      ...expected,
    });
  });

  it('build POST announces the new release', async () => {
    const h = harness();
    const { alice } = await adminAndAlice(h.app);
    await createApp(h.app, alice, 'myapp');
    const res = await deploy(h.app, alice, 'myapp');
    expect(res.headers['svc-release']).toBe('2');
    expect(res.headers['x-svc-release']).toBe('2');
  });

  it('other responses carry no release header', async () => {
    const h = harness();
    const { alice } = await adminAndAlice(h.app);
    const res = await request(h.app).post('/v1/apps').set('Authorization', auth(alice)).send({ id: 'myapp' }).expect(201);
    expect(res.headers['x-svc-release']).toBeUndefined();
  });
});

describe('Endpoints by version', () => {
  const h = harness();
  let root: string;
  let alice: string;
  beforeAll(async () => {
    ({ root, alice } = await adminAndAlice(h.app));
    await createApp(h.app, alice, 'myapp');
    await deploy(h.app, alice, 'myapp');
  });

  const call = (method: 'get' | 'post', path: string, version: string, token: string) =>
    request(h.app)[method](path).set('Authorization', auth(token)).set('SVC_API_VERSION', version);

  it('certificates exist from 1.2', async () => {
    expect((await call('get', '/v1/certs', '1.1', root)).status).toBe(404);
    expect((await call('get', '/v1/certs/www.example.com', '1.1', root)).status).toBe(404);
    expect((await call('get', '/v1/certs', '1.2', root)).status).toBe(200);
  });

  it('an endpoint of a later version is 404 even without credentials', async () => {
    const res = await request(h.app).get('/v1/certs').set('SVC_API_VERSION', '1.1').expect(404);
    expect(res.body).toEqual({ detail: 'Not found.' });
  });

  it('the users listing exists from 1.3', async () => {
    expect((await call('get', '/v1/users', '1.2', root)).status).toBe(404);
    expect((await call('get', '/v1/users', '1.3', root)).status).toBe(200);
  });

  it('restart exists from 1.3', async () => {
    expect((await call('post', '/v1/apps/myapp/containers/restart', '1.2', alice)).status).toBe(404);
    expect((await call('post', '/v1/apps/myapp/containers/web/restart', '1.2', alice)).status).toBe(404);
    expect((await call('post', '/v1/apps/myapp/containers/web/1/restart', '1.2', alice)).status).toBe(404);
    expect((await call('post', '/v1/apps/myapp/containers/restart', '1.3', alice)).status).toBe(200);
  });

  it('change-password exists from 1.4', async () => {
    expect((await call('post', '/v1/auth/passwd', '1.3', alice)).status).toBe(404);
    expect((await call('post', '/v1/auth/passwd', '1.4', alice)).status).toBe(400);
  });

  it('token regeneration exists from 1.5', async () => {
    const h2 = harness();
    const { alice: token } = await adminAndAlice(h2.app);
    expect((await request(h2.app).post('/v1/auth/tokens').set('Authorization', auth(token)).set('SVC_API_VERSION', '1.4')).status).toBe(404);
    expect((await request(h2.app).post('/v1/auth/tokens').set('Authorization', auth(token)).set('SVC_API_VERSION', '1.5')).status).toBe(200);
  });

  it('app update by POST exists from 1.7; before, the other methods are still allowed', async () => {
    const before = await call('post', '/v1/apps/myapp', '1.6', alice).send({ owner: 'alice' });
    expect(before.status).toBe(404);
    const put = await request(h.app).put('/v1/apps/myapp').set('Authorization', auth(alice)).set('SVC_API_VERSION', '1.6');
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, DELETE, HEAD, OPTIONS');
    expect((await call('post', '/v1/apps/myapp', '1.7', alice).send({ owner: 'alice' })).status).toBe(200);
  });

  it('a certificate common name override counts from 1.3 only', async () => {
    for (const domain of ['one.example.com', 'two.example.com', 'custom.example.com']) {
      await call('post', '/v1/apps/myapp/domains', '1.7', root).send({ domain }).expect(201);
    }
    const body = { certificate: fakeCertificatePem({ cn: 'one.example.com' }), key: fakePrivateKeyPem('one.example.com'), common_name: 'custom.example.com' };
    const at12 = await call('post', '/v1/certs', '1.2', root).send(body).expect(201);
    expect(at12.body.common_name).toBe('one.example.com');
    const other = { certificate: fakeCertificatePem({ cn: 'two.example.com' }), key: fakePrivateKeyPem('two.example.com'), common_name: 'custom.example.com' };
    const at13 = await call('post', '/v1/certs', '1.3', root).send(other).expect(201);
    expect(at13.body.common_name).toBe('custom.example.com');
  });
});
