import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeEachBackend, expectPage, signUp, useServer, type Session } from './support';
import { readEvents, type EventJson } from './support/event-stream';


interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A webhook receiver on 127.0.0.1 that answers `status()` and keeps what it got. */
async function receiver(status: () => number): Promise<{ server: Server; url: string; got: Received[] }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.statusCode = status();
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

const waitFor = async <T>(check: () => Promise<T | undefined> | T | undefined, ms = 15_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
};

describeEachBackend('events: journal, webhooks, live stream, idempotency keys, conditional writes', (backend) => {
  const server = useServer(backend, {
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_POLL_SECONDS: '1',
    WEBHOOK_RETRY_BASE_SECONDS: '1',
  });
  let root: Session;
  let alice: Session;
  let bob: Session;

  beforeAll(async () => {
    root = await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
    bob = await signUp(server.api, 'bob');
    expect((await alice.api.post('/v1/apps/', { id: 'shop' })).status).toBe(201);
    expect((await bob.api.post('/v1/apps/', { id: 'bobs' })).status).toBe(201);
  });

  it('journals changes without config values; users see their apps and account, administrators everything', async () => {
    expect((await alice.api.post('/v1/apps/shop/config/', { values: { SECRET_TOKEN: 'hunter2-value' } })).status).toBe(201);
    const mine = expectPage<EventJson>(await alice.api.get('/v1/events/'));
    expect(JSON.stringify(mine.results)).not.toContain('hunter2-value');
    const config = mine.results.find((e) => e.action === 'config.update');
    expect(config).toMatchObject({ actor: 'alice', app: 'shop', target: 'v2', address: expect.any(String) });
    expect(config?.summary).toContain('SECRET_TOKEN');
    expect(config?.request_id).toMatch(/.+/);
    expect(mine.results.some((e) => e.app === 'bobs')).toBe(false);
    expect(mine.results.some((e) => e.action === 'user.login' && e.actor === 'alice')).toBe(true);
    expect(mine.results.some((e) => e.actor === 'bob')).toBe(false);
    const all = expectPage<EventJson>(await root.api.get('/v1/events/?page_size=100'));
    expect(all.results.some((e) => e.app === 'bobs' && e.action === 'app.create')).toBe(true);
    const filtered = expectPage<EventJson>(await root.api.get('/v1/events/?actor=bob&action=app'));
    expect(filtered.results.map((e) => e.action)).toEqual(['app.create']);
    const failed = await server.api.post('/v1/auth/login/', { username: 'alice', password: 'wrong' });
    expect(failed.status).toBe(400);
    const logins = expectPage<EventJson>(await root.api.get('/v1/events/?action=user.login_failed'));
    expect(logins.results[0]).toMatchObject({ actor: 'alice', target: 'alice' });
    expect((await alice.api.get('/v1/events/?since=yesterday')).status).toBe(400);
    expect((await alice.api.post('/v1/events/', {})).status).toBe(405);
  });

  it('replays a POST with the same Idempotency-Key once, refuses another body with it', async () => {
    const releases = async (): Promise<number> => expectPage(await alice.api.get('/v1/apps/shop/releases/')).count;
    const before = await releases();
    const headers = { 'Idempotency-Key': 'retry-1' };
    const first = await alice.api.post('/v1/apps/shop/config/', { values: { A: '1' } }, { headers });
    const again = await alice.api.post('/v1/apps/shop/config/', { values: { A: '1' } }, { headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await releases()).toBe(before + 1);
    const other = await alice.api.post('/v1/apps/shop/config/', { values: { A: '2' } }, { headers });
    expect(other.status).toBe(422);
    // Keys are per user: bob's "retry-1" is his own.
    expect((await bob.api.post('/v1/apps/bobs/config/', { values: { A: '1' } }, { headers })).status).toBe(201);
  });

  it('sends ETags, answers If-None-Match with 304 and refuses a stale If-Match with 412', async () => {
    const current = await alice.api.get('/v1/apps/shop/config/');
    const etag = current.headers.get('etag') as string;
    expect(etag).toMatch(/^"config-/);
    expect((await alice.api.get('/v1/apps/shop/config/', { headers: { 'If-None-Match': etag } })).status).toBe(304);
    const race = await Promise.all(
      ['X', 'Y'].map((name) => alice.api.post('/v1/apps/shop/config/', { values: { [name]: '1' } }, { headers: { 'If-Match': etag } })),
    );
    expect(race.map((r) => r.status).sort()).toEqual([201, 412]);
    const refused = race.find((r) => r.status === 412);
    expect(refused?.headers.get('etag')).toBe((await alice.api.get('/v1/apps/shop/config/')).headers.get('etag'));

    expect((await alice.api.post('/v1/apps/shop/builds/', { image: 'example/shop:1', procfile: { web: 'serve' } })).status).toBe(201);
    const app = await alice.api.get('/v1/apps/shop/');
    const appTag = app.headers.get('etag') as string;
    expect((await alice.api.post('/v1/apps/shop/scale/', { web: 2 }, { headers: { 'If-Match': appTag } })).status).toBe(204);
    expect((await alice.api.post('/v1/apps/shop/scale/', { web: 3 }, { headers: { 'If-Match': appTag } })).status).toBe(412);
    expect((await alice.api.get('/v1/apps/shop/', { headers: { 'If-None-Match': appTag } })).status).toBe(200);
  });

  it('delivers signed events to webhooks in order, retries while the receiver fails, and records deliveries', async () => {
    let answer = 204;
    const hook = await receiver(() => answer);
    try {
      const created = await alice.api.post<{ uuid: string; secret: string; events: string[] }>('/v1/apps/shop/webhooks/', { url: hook.url, events: ['config', 'scale'] });
      expect(created.status).toBe(201);
      const { uuid, secret } = created.body;
      expect(secret).toMatch(/.{16,}/);
      expect(JSON.stringify((await alice.api.get(`/v1/apps/shop/webhooks/${uuid}/`)).body)).not.toContain(secret);
      expect((await bob.api.get(`/v1/apps/shop/webhooks/${uuid}/`)).status).not.toBe(200);
      expect((await alice.api.post('/v1/apps/shop/config/', { values: { HOOKED: '1' } })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/shop/scale/', { web: 1 })).status).toBe(204);
      await waitFor(() => (hook.got.length >= 2 ? true : undefined));
      expect(hook.got.map((r) => r.headers['svc-event'])).toEqual(['config.update', 'scale.update']);
      for (const received of hook.got) {
        const expected = createHmac('sha256', secret).update(received.body).digest('base64');
        expect(received.headers['svc-webhook-hmac-sha256']).toBe(expected);
        expect(received.headers['svc-webhook-id']).toBe(uuid);
        expect(JSON.parse(received.body)).toMatchObject({ app: 'shop', actor: 'alice' });
      }
      answer = 500;
      expect((await alice.api.post('/v1/apps/shop/config/', { values: { FAILING: '1' } })).status).toBe(201);
      await waitFor(() => (hook.got.length >= 4 ? true : undefined));
      const pending = expectPage<{ status: string; attempts: number; last_code: number }>(await alice.api.get(`/v1/apps/shop/webhooks/${uuid}/deliveries/`));
      expect(pending.results[0]).toMatchObject({ status: 'pending', last_code: 500 });
      expect(pending.results[0]?.attempts).toBeGreaterThanOrEqual(2);
      answer = 200;
      const delivered = await waitFor(async () => {
        const page = expectPage<{ status: string; attempts: number }>(await alice.api.get(`/v1/apps/shop/webhooks/${uuid}/deliveries/`));
        return page.results.every((d) => d.status === 'delivered') ? page : undefined;
      });
      expect(delivered.count).toBe(3);
      const bodies = hook.got.map((r) => r.body);
      // Delivered once as a success: no delivery is sent again after its 2xx.
      await new Promise((r) => setTimeout(r, 1500));
      expect(hook.got.map((r) => r.body)).toEqual(bodies);
      expect((await alice.api.delete(`/v1/apps/shop/webhooks/${uuid}/`)).status).toBe(204);
      expect((await alice.api.get(`/v1/apps/shop/webhooks/${uuid}/`)).status).toBe(404);
    } finally {
      hook.server.close();
    }
  });

  it('never delivers to a restricted address that the allow-list does not name', async () => {
    const created = await alice.api.post<{ uuid: string }>('/v1/apps/shop/webhooks/', { url: 'http://10.1.2.3:9/hook', events: ['config'] });
    expect(created.status).toBe(201);
    expect((await alice.api.post('/v1/apps/shop/config/', { values: { PRIVATE: '1' } })).status).toBe(201);
    const record = await waitFor(async () => {
      const page = expectPage<{ attempts: number; last_error: string; last_code: number | null }>(await alice.api.get(`/v1/apps/shop/webhooks/${created.body.uuid}/deliveries/`));
      return page.results[0] !== undefined && page.results[0].attempts > 0 ? page.results[0] : undefined;
    });
    expect(record.last_code).toBeNull();
    expect(record.last_error).toMatch(/restricted address/);
    expect((await alice.api.post('/v1/apps/shop/webhooks/', { url: 'ftp://example.com/', events: ['nope'] })).status).toBe(400);
  });

  it('streams the app events as Server-Sent Events and resumes after Last-Event-ID', async () => {
    const url = server.api.url('/v1/apps/shop/events/?follow=true');
    const firstTwo = readEvents(url, alice.token, 2);
    await new Promise((r) => setTimeout(r, 500));
    for (const name of ['S1', 'S2', 'S3', 'S4']) expect((await alice.api.post('/v1/apps/shop/config/', { values: { [name]: '1' } })).status).toBe(201);
    const seen = await firstTwo;
    expect(seen.map((f) => f.event)).toEqual(['config.update', 'release.create']);
    expect(seen[0]?.id).toBe(seen[0]?.data.uuid);
    const rest = await readEvents(url, alice.token, 6, seen[1]?.id);
    expect(rest.map((f) => f.data.summary.split(' ').slice(-1)[0])).toEqual(['S2', 'S2', 'S3', 'S3', 'S4', 'S4']);
    const all = new Set([...seen, ...rest].map((f) => f.id));
    expect(all.size).toBe(8);
    expect((await bob.api.get('/v1/apps/shop/events/?follow=true')).status).not.toBe(200);
  });
});
