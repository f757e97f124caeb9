import { family, parseExposition, sampleValue, type Families } from '../../metrics-prometheus/test/support/exposition';
import { describeEachBackend, signUp, useServer, type ApiClient } from './support';

/*
 * GET /metrics through the running controller: the Prometheus text parses, and the figures
 * move with the requests and deploys made; a METRICS_TOKEN protects the endpoint.
 */

async function scrape(api: ApiClient, token?: string): Promise<Families> {
  const res = await fetch(api.url('/metrics'), { headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

const requests = (f: Families, labels: Record<string, string>): number => sampleValue(f, 'svc_http_requests_total', labels) ?? 0;

describeEachBackend('GET /metrics', (backend) => {
  const server = useServer(backend, { SCHEDULER: 'memory' });

  it('counts API requests by route pattern and status, and times them', async () => {
    const alice = (await signUp(server.api, 'alice')).token;
    await server.api.as(alice).post('/v1/apps/', { id: 'metered' });
    const before = await scrape(server.api);
    const route = { method: 'GET', route: '/v1/apps/:id', status: '200' };
    const missing = { method: 'GET', route: '/v1/apps/:id', status: '404' };

    for (let i = 0; i < 3; i++) expect((await server.api.as(alice).get('/v1/apps/metered')).status).toBe(200);
    expect((await server.api.as(alice).get('/v1/apps/absent-app')).status).toBe(404);
    const after = await scrape(server.api);

    expect(requests(after, route) - requests(before, route)).toBe(3);
    expect(requests(after, missing) - requests(before, missing)).toBe(1);
    const count = (f: Families): number => sampleValue(f, 'svc_http_request_duration_seconds_count', route) ?? 0;
    expect(count(after) - count(before)).toBe(3);
    // Raw paths never become labels.
    expect(family(after, 'svc_http_requests_total').metrics.some((m) => m.labels?.route?.includes('metered'))).toBe(false);
    // The scrape itself is a request like any other.
    expect(requests(after, { route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
  });

  it('counts deploys by outcome and containers by state', async () => {
    const bob = (await signUp(server.api, 'bob')).token;
    const api = server.api.as(bob);
    await api.post('/v1/apps/', { id: 'deployed' });
    const before = await scrape(server.api);
    const deploys = (f: Families, outcome: string): number => sampleValue(f, 'svc_deploys_total', { outcome }) ?? 0;

    expect((await api.post('/v1/apps/deployed/builds/', { image: 'example/web:1', procfile: { web: 'serve', worker: 'work' } })).status).toBe(201);
    expect((await api.post('/v1/apps/deployed/scale/', { web: 2 })).status).toBe(204);
    expect((await api.post('/v1/apps/deployed/releases/rollback/', { version: 99 })).status).toBe(404);
    const after = await scrape(server.api);

    expect(deploys(after, 'succeeded') - deploys(before, 'succeeded')).toBe(1);
    expect(deploys(after, 'rejected') - deploys(before, 'rejected')).toBe(1);
    expect(deploys(after, 'failed') - deploys(before, 'failed')).toBe(0);
    expect(sampleValue(after, 'svc_deploy_duration_seconds_count', { outcome: 'succeeded' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(after, 'svc_deploys_in_progress')).toBe(0);
    expect((sampleValue(after, 'svc_containers', { state: 'up' }) ?? 0) - (sampleValue(before, 'svc_containers', { state: 'up' }) ?? 0)).toBe(2);
    expect(sampleValue(after, 'svc_containers', { state: 'crashed' })).toBe(0);
  });

  it('reports the database pool, the event-loop lag and the version', async () => {
    const f = await scrape(server.api);

    expect(sampleValue(f, 'svc_db_pool_max_connections')).toBe(backend.name === 'postgresql' ? 10 : 2);
    expect(sampleValue(f, 'svc_db_pool_open_connections')).toBeGreaterThanOrEqual(1);
    // The scrape's own container count may be waiting for a connection pg is opening.
    expect(sampleValue(f, 'svc_db_pool_waiting_clients')).toBeGreaterThanOrEqual(0);
    expect(family(f, 'nodejs_eventloop_lag_seconds').type).toBe('GAUGE');
    expect(sampleValue(f, 'svc_build_info')).toBe(1);
  });
});

describeEachBackend('GET /metrics with METRICS_TOKEN', (backend) => {
  const token = 'metrics-0123456789abcdef';
  const server = useServer(backend, { SCHEDULER: 'memory', METRICS_TOKEN: token });

  it('answers 401 without the token, with an API token, or with a wrong one, and 200 with it', async () => {
    const alice = (await signUp(server.api, 'alice')).token;
    const statusWith = async (authorization?: string): Promise<number> =>
      (await fetch(server.api.url('/metrics'), { headers: authorization === undefined ? {} : { Authorization: authorization } })).status;

    expect(await statusWith()).toBe(401);
    expect(await statusWith(`token ${alice}`)).toBe(401);
    expect(await statusWith(`Bearer ${alice}`)).toBe(401);
    expect(await statusWith(`Bearer ${token}x`)).toBe(401);
    const families = await scrape(server.api, token);
    expect(requests(families, { route: '/metrics', status: '401' })).toBe(4);
  });
});

describeEachBackend('GET /metrics with METRICS=off', (backend) => {
  const server = useServer(backend, { SCHEDULER: 'memory', METRICS: 'off' });

  it('is not served', async () => {
    expect((await server.api.get('/metrics')).status).toBe(404);
  });
});
