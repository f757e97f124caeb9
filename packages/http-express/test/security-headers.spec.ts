import request from 'supertest';
import { auth, harness, signUp } from './harness';

const EXPECTED = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
};

function expectSecurityHeaders(headers: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(EXPECTED)) expect([name, headers[name]]).toEqual([name, value]);
  expect(headers['x-powered-by']).toBeUndefined();
}

describe('security headers', () => {
  it('are on successes, errors of every kind, probes and OPTIONS, without X-Powered-By or HSTS over HTTP', async () => {
    const { app } = harness();
    const token = await signUp(app, 'root');
    const responses = await Promise.all([
      request(app).get('/v1/apps').set('Authorization', auth(token)),
      request(app).post('/v1/apps').set('Authorization', auth(token)).send({ id: 'Bad Id' }),
      request(app).get('/v1/apps'),
      request(app).get('/v1/apps/nothing-here').set('Authorization', auth(token)),
      request(app).get('/v1/nowhere'),
      request(app).put('/v1/apps'),
      request(app).get('/v1/apps').set('SVC_API_VERSION', '9.9'),
      request(app).post('/v1/auth/login').set('Content-Type', 'application/json').send('{bad'),
      request(app).get('/healthz'),
      request(app).options('/v1/apps'),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 400, 401, 404, 404, 405, 406, 400, 200, 204]);
    for (const response of responses) {
      expectSecurityHeaders(response.headers);
      expect(response.headers['strict-transport-security']).toBeUndefined();
    }
  });

  it('adds Strict-Transport-Security when a trusted proxy reports HTTPS, and only then', async () => {
    const trusted = harness({ trustProxy: true }).app;
    const viaProxy = await request(trusted).get('/healthz').set('X-Forwarded-Proto', 'https');
    expect(viaProxy.headers['strict-transport-security']).toBe('max-age=31536000');
    const plain = await request(trusted).get('/healthz');
    expect(plain.headers['strict-transport-security']).toBeUndefined();
    // An untrusted client cannot claim HTTPS.
    const untrusted = await request(harness().app).get('/healthz').set('X-Forwarded-Proto', 'https');
    expect(untrusted.headers['strict-transport-security']).toBeUndefined();
    expectSecurityHeaders(viaProxy.headers);
  });
});
