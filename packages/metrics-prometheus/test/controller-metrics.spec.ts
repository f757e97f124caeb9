import { ControllerMetrics, createRouterMetrics, type PoolStats } from '@svc/metrics-prometheus';
import { family, parseExposition, sampleValue as value, type Families } from './support/exposition';

async function scrape(metrics: ControllerMetrics): Promise<Families> {
  return parseExposition(await metrics.render());
}

describe('ControllerMetrics', () => {
  it('counts and times requests by method, route pattern and status', async () => {
    const metrics = new ControllerMetrics({ processMetrics: false });
    metrics.observeRequest({ method: 'GET', route: '/v1/apps/:id', status: 200, durationSeconds: 0.004 });
    metrics.observeRequest({ method: 'GET', route: '/v1/apps/:id', status: 200, durationSeconds: 0.2 });
    metrics.observeRequest({ method: 'POST', route: '/v1/apps', status: 400, durationSeconds: 0.01 });

    const families = await scrape(metrics);

    expect(family(families, 'svc_http_requests_total').type).toBe('COUNTER');
    expect(value(families, 'svc_http_requests_total', { method: 'GET', route: '/v1/apps/:id', status: '200' })).toBe(2);
    expect(value(families, 'svc_http_requests_total', { method: 'POST', route: '/v1/apps', status: '400' })).toBe(1);
    expect(family(families, 'svc_http_request_duration_seconds').type).toBe('HISTOGRAM');
    const get = { method: 'GET', route: '/v1/apps/:id', status: '200' };
    expect(value(families, 'svc_http_request_duration_seconds_count', get)).toBe(2);
    expect(value(families, 'svc_http_request_duration_seconds_sum', get)).toBeCloseTo(0.204, 6);
    expect(value(families, 'svc_http_request_duration_seconds_bucket', { ...get, le: '0.005' })).toBe(1);
    expect(value(families, 'svc_http_request_duration_seconds_bucket', { ...get, le: '+Inf' })).toBe(2);
  });

  it('counts deploys by outcome, with every outcome at zero before the first', async () => {
    const metrics = new ControllerMetrics({ processMetrics: false });
    expect(value(await scrape(metrics), 'svc_deploys_total', { outcome: 'failed' })).toBe(0);

    const first = metrics.deployStarted('a');
    const second = metrics.deployStarted('b');
    expect(value(await scrape(metrics), 'svc_deploys_in_progress')).toBe(2);
    first('succeeded');
    second('failed');

    const families = await scrape(metrics);
    expect(value(families, 'svc_deploys_total', { outcome: 'succeeded' })).toBe(1);
    expect(value(families, 'svc_deploys_total', { outcome: 'failed' })).toBe(1);
    expect(value(families, 'svc_deploys_total', { outcome: 'rejected' })).toBe(0);
    expect(value(families, 'svc_deploys_in_progress')).toBe(0);
    expect(value(families, 'svc_deploy_duration_seconds_count', { outcome: 'succeeded' })).toBe(1);
    // No per-app series: apps are the tenants' to create.
    expect(family(families, 'svc_deploys_total').metrics.every((m) => m.labels?.app === undefined)).toBe(true);
  });

  it('counts webhook delivery attempts by outcome, every outcome at zero before the first', async () => {
    const metrics = new ControllerMetrics({ processMetrics: false });
    expect(value(await scrape(metrics), 'svc_webhook_deliveries_total', { outcome: 'failed' })).toBe(0);
    metrics.attempted('retrying');
    metrics.attempted('retrying');
    metrics.attempted('delivered');
    const families = await scrape(metrics);
    expect(family(families, 'svc_webhook_deliveries_total').type).toBe('COUNTER');
    expect(value(families, 'svc_webhook_deliveries_total', { outcome: 'retrying' })).toBe(2);
    expect(value(families, 'svc_webhook_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(value(families, 'svc_webhook_deliveries_total', { outcome: 'failed' })).toBe(0);
  });

  it('reads containers by state and the pool at each scrape', async () => {
    let counts: Record<string, number> = { up: 3, crashed: 1 };
    let pool: PoolStats = { max: 10, open: 4, idle: 3, waiting: 0 };
    const metrics = new ControllerMetrics({ processMetrics: false, containers: async () => counts, pool: () => pool });

    let families = await scrape(metrics);
    expect(value(families, 'svc_containers', { state: 'up' })).toBe(3);
    expect(value(families, 'svc_containers', { state: 'crashed' })).toBe(1);
    expect(value(families, 'svc_containers', { state: 'down' })).toBe(0);
    expect(value(families, 'svc_db_pool_open_connections')).toBe(4);

    counts = { up: 5 };
    pool = { max: 10, open: 10, idle: 0, waiting: 7 };
    families = await scrape(metrics);
    expect(value(families, 'svc_containers', { state: 'up' })).toBe(5);
    expect(value(families, 'svc_containers', { state: 'crashed' })).toBe(0);
    expect(value(families, 'svc_db_pool_waiting_clients')).toBe(7);
    expect(value(families, 'svc_db_pool_max_connections')).toBe(10);
  });

  it('reports no container figures, and still answers, while the database does not', async () => {
    const metrics = new ControllerMetrics({
      processMetrics: false,
      containers: async () => {
        throw new Error('database down');
      },
    });

    const families = await scrape(metrics);

    expect(family(families, 'svc_containers').metrics).toEqual([]);
  });

  it('includes the event-loop lag among the process metrics', async () => {
    const metrics = new ControllerMetrics({ version: '1.2.3' });

    const families = await scrape(metrics);

    expect(family(families, 'nodejs_eventloop_lag_seconds').type).toBe('GAUGE');
    expect(value(families, 'svc_build_info', { version: '1.2.3' })).toBe(1);
  });

  it('keeps two instances apart', async () => {
    const one = new ControllerMetrics({ processMetrics: false });
    const two = new ControllerMetrics({ processMetrics: false });
    one.observeRequest({ method: 'GET', route: '/healthz', status: 200, durationSeconds: 0.001 });

    expect(family(await scrape(two), 'svc_http_requests_total').metrics).toEqual([]);
  });
});

describe('createRouterMetrics', () => {
  it('counts app requests by app and status class in the same registry', async () => {
    const metrics = new ControllerMetrics({ processMetrics: false });
    const router = createRouterMetrics(metrics.registry);
    router.observe({ app: 'myapp', status: 200, durationSeconds: 0.01 });
    router.observe({ app: 'myapp', status: 204, durationSeconds: 0.01 });
    router.observe({ app: null, status: 404, durationSeconds: 0.001 });

    const families = await scrape(metrics);

    expect(value(families, 'svc_router_requests_total', { app: 'myapp', status_class: '2xx' })).toBe(2);
    expect(value(families, 'svc_router_requests_total', { app: '', status_class: '4xx' })).toBe(1);
    expect(value(families, 'svc_router_request_duration_seconds_count', { app: 'myapp' })).toBe(2);
  });
});

describe('parseExposition (the tests\' reading of a scrape)', () => {
  it('finds every label set of a histogram, not only the first', async () => {
    const metrics = new ControllerMetrics({ processMetrics: false });
    for (const route of ['/a', '/b', '/c']) metrics.observeRequest({ method: 'GET', route, status: 200, durationSeconds: 0.01 });

    const families = await scrape(metrics);

    for (const route of ['/a', '/b', '/c']) expect(value(families, 'svc_http_request_duration_seconds_count', { route })).toBe(1);
  });
});
