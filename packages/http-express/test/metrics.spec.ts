import request from 'supertest';
import type { RequestSample } from '../src';
import { auth, createApp, harness, signUp } from './harness';

const scrape = async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', body: 'svc_up 1\n' });

describe('request observer', () => {
  const samples: RequestSample[] = [];
  const h = harness({ requestObserver: (sample) => samples.push(sample) });
  let alice: string;
  beforeAll(async () => {
    alice = await signUp(h.app, 'alice');
    await createApp(h.app, alice, 'myapp');
  });
  beforeEach(() => {
    samples.length = 0;
  });

  it('reports the route pattern, not the path, with status and duration', async () => {
    await request(h.app).get('/v1/apps/myapp').set('Authorization', auth(alice)).expect(200);
    await request(h.app).get('/v1/apps/nothere').set('Authorization', auth(alice)).expect(404);

    expect(samples).toEqual([
      { method: 'GET', route: '/v1/apps/:id', status: 200, durationSeconds: expect.any(Number) },
      { method: 'GET', route: '/v1/apps/:id', status: 404, durationSeconds: expect.any(Number) },
    ]);
    expect(samples[0]?.durationSeconds).toBeGreaterThan(0);
  });

  it('labels a path no route knows as unmatched, and a known path with another method by its pattern', async () => {
    await request(h.app).get('/no/such/thing/12345').expect(404);
    await request(h.app).put('/v1/apps/myapp').set('Authorization', auth(alice)).expect(405);

    expect(samples.map((s) => `${s.method} ${s.route} ${s.status}`)).toEqual(['GET unmatched 404', 'PUT /v1/apps/:id 405']);
  });

  it('still answers when the observer throws', async () => {
    const broken = harness({
      requestObserver: () => {
        throw new Error('observer broke');
      },
    });

    await request(broken.app).get('/healthz').expect(200);
  });
});

describe('GET /metrics', () => {
  it('is absent when the application serves no metrics', async () => {
    await request(harness().app).get('/metrics').expect(404);
  });

  it('serves the scrape with its content type when no token is set', async () => {
    const h = harness({ metrics: { scrape, token: null } });

    const res = await request(h.app).get('/metrics').expect(200);

    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toBe('svc_up 1\n');
  });

  it('with a token, answers 401 without the right bearer token and 200 with it', async () => {
    const h = harness({ metrics: { scrape, token: 's3cret-metrics-token' } });

    const none = await request(h.app).get('/metrics').expect(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    expect(none.text).not.toContain('svc_up');
    await request(h.app).get('/metrics').set('Authorization', 'Bearer wrong').expect(401);
    await request(h.app).get('/metrics').set('Authorization', 's3cret-metrics-token').expect(401);
    const ok = await request(h.app).get('/metrics').set('Authorization', 'Bearer s3cret-metrics-token').expect(200);
    expect(ok.text).toBe('svc_up 1\n');
  });
});
