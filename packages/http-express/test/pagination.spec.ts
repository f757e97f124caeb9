import request from 'supertest';
import { adminAndAlice, auth, createApp, harness } from './harness';

describe('Pagination', () => {
  const h = harness();
  let alice: string;
  beforeAll(async () => {
    ({ alice } = await adminAndAlice(h.app));
    for (const id of ['app-a', 'app-b', 'app-c']) await createApp(h.app, alice, id);
  });

  const list = (query: string, version = '1.6') =>
    request(h.app).get(`/v1/apps${query}`).set('Authorization', auth(alice)).set('Host', 'api.example.com').set('SVC_API_VERSION', version);

  it('page_size from 1.6: next and previous are absolute URLs with the same query', async () => {
    const first = await list('?page_size=2&foo=bar').expect(200);
    expect(first.body).toEqual({
      count: 3,
      next: 'http://api.example.com/v1/apps?page_size=2&foo=bar&page=2',
      previous: null,
      results: [expect.objectContaining({ id: 'app-a' }), expect.objectContaining({ id: 'app-b' })],
    });
    const second = await list('?page_size=2&page=2&foo=bar').expect(200);
    expect(second.body).toEqual({
      count: 3,
      next: null,
      previous: 'http://api.example.com/v1/apps?page_size=2&foo=bar',
      results: [expect.objectContaining({ id: 'app-c' })],
    });
  });

  it('the links keep the path as requested, trailing slash included', async () => {
    const res = await request(h.app).get('/v1/apps/?page_size=1&page=2').set('Authorization', auth(alice)).set('Host', 'api.example.com:8000').expect(200);
    expect(res.body.next).toBe('http://api.example.com:8000/v1/apps/?page_size=1&page=3');
    expect(res.body.previous).toBe('http://api.example.com:8000/v1/apps/?page_size=1');
  });

  it('behind a trusted proxy the forwarded protocol and host are used', async () => {
    const proxied = harness({ trustProxy: true });
    const { alice: token } = await adminAndAlice(proxied.app);
    for (const id of ['app-a', 'app-b']) await createApp(proxied.app, token, id);
    const res = await request(proxied.app)
      .get('/v1/apps?page_size=1')
      .set('Authorization', auth(token))
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'controller.example.com')
      .expect(200);
    expect(res.body.next).toBe('https://controller.example.com/v1/apps?page_size=1&page=2');
  });

  it('before 1.6 page_size is ignored, even when invalid', async () => {
    const res = await list('?page_size=2', '1.5').expect(200);
    expect(res.body.count).toBe(3);
    expect(res.body.results).toHaveLength(3);
    expect(res.body.next).toBeNull();
    await list('?page_size=0', '1.5').expect(200);
  });

  it('a page past the end is 404; page 1 of an empty list is 200', async () => {
    const res = await list('?page_size=2&page=3').expect(404);
    expect(res.body).toEqual({ detail: 'Invalid page.' });
    const empty = await request(h.app).get('/v1/keys?page=1').set('Authorization', auth(alice)).expect(200);
    expect(empty.body).toEqual({ count: 0, next: null, previous: null, results: [] });
  });

  it.each([
    ['?page=0', { page: ['A valid positive integer is required.'] }],
    ['?page=-1', { page: ['A valid positive integer is required.'] }],
    ['?page=abc', { page: ['A valid positive integer is required.'] }],
    ['?page_size=0', { page_size: ['A valid positive integer is required.'] }],
    ['?page=1&page=2', { page: ['A valid positive integer is required.'] }],
    ['?page_size=1&page_size=2', { page_size: ['A valid positive integer is required.'] }],
  ])('%s is 400 on the field', async (query, body) => {
    const res = await list(query).expect(400);
    expect(res.body).toEqual(body);
  });

  it('page_size above the maximum is clamped', async () => {
    const res = await list('?page_size=100000').expect(200);
    expect(res.body.results).toHaveLength(3);
  });

  it('other paginated lists share the envelope and links', async () => {
    await request(h.app).post('/v1/apps/app-a/config').set('Authorization', auth(alice)).send({ values: { A: '1' } }).expect(201);
    const res = await request(h.app)
      .get('/v1/apps/app-a/releases?page_size=1')
      .set('Authorization', auth(alice))
      .set('Host', 'api.example.com')
      .expect(200);
    expect(res.body).toEqual({
      count: 2,
      next: 'http://api.example.com/v1/apps/app-a/releases?page_size=1&page=2',
      previous: null,
      results: [expect.objectContaining({ version: 2 })],
    });
  });
});
