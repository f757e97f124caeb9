import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DASHBOARD_CSP, isSameOrigin } from '../src';
import { harness, signUp } from './harness';

describe('isSameOrigin', () => {
  it('is true for the origin the request was sent to, default ports included', () => {
    expect(isSameOrigin('http://127.0.0.1:8000', 'http', '127.0.0.1:8000')).toBe(true);
    expect(isSameOrigin('https://api.example.com', 'https', 'api.example.com:443')).toBe(true);
    expect(isSameOrigin('http://[::1]:8000', 'http', '[::1]:8000')).toBe(true);
    expect(isSameOrigin('HTTP://Localhost:8000', 'http', 'localhost:8000')).toBe(true);
  });

  it('is false for another scheme, host or port, for null and for anything that is not a bare origin', () => {
    expect(isSameOrigin('https://127.0.0.1:8000', 'http', '127.0.0.1:8000')).toBe(false);
    expect(isSameOrigin('http://127.0.0.1:8001', 'http', '127.0.0.1:8000')).toBe(false);
    expect(isSameOrigin('http://evil.example.net', 'http', '127.0.0.1')).toBe(false);
    expect(isSameOrigin('null', 'http', '127.0.0.1:8000')).toBe(false);
    expect(isSameOrigin('http://127.0.0.1:8000/', 'http', '127.0.0.1:8000')).toBe(false);
    expect(isSameOrigin('http://127.0.0.1:8000/path', 'http', '127.0.0.1:8000')).toBe(false);
    expect(isSameOrigin('file://127.0.0.1', 'file', '127.0.0.1')).toBe(false);
    expect(isSameOrigin('http://127.0.0.1', 'http', 'evil.example.net@127.0.0.1')).toBe(false);
    expect(isSameOrigin('http://127.0.0.1', 'http', undefined)).toBe(false);
  });
});

describe('CORS: the controller own pages', () => {
  const h = harness();

  it('a POST whose Origin is the request own origin passes (the dashboard), without CORS headers', async () => {
    const res = await request(h.app).post('/v1/auth/register').set('Host', '127.0.0.1:8000').set('Origin', 'http://127.0.0.1:8000').send({ username: 'pageuser', password: 'pageuser-Secret1', email: 'p@example.com' });
    expect(res.status).toBe(201);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('another origin is still refused, and so is a rebinding name that is its own origin but not an allowed host', async () => {
    const token = await signUp(h.app, 'corsbob');
    const other = await request(h.app).get('/v1/apps').set('Host', '127.0.0.1:8000').set('Origin', 'http://127.0.0.1:9000').set('Authorization', `token ${token}`);
    expect(other.status).toBe(403);
    const rebinding = await request(h.app).get('/v1/apps').set('Host', 'attacker.example.net:8000').set('Origin', 'http://attacker.example.net:8000').set('Authorization', `token ${token}`);
    expect(rebinding.status).toBe(400);
    expect(rebinding.body).toEqual({ detail: 'Invalid Host header: this server does not answer for that name.' });
  });
});

describe('the dashboard files', () => {
  const directory = mkdtempSync(join(tmpdir(), 'svc-dashboard-files-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const h = harness({ dashboardDirectory: directory });
  const without = harness();

  it('answers 503 until the dashboard is built', async () => {
    const res = await request(h.app).get('/dashboard/').expect(503);
    expect(res.body).toEqual({ detail: 'The dashboard is not built: run npm run build.' });
  });

  describe('once built', () => {
    beforeAll(() => {
      mkdirSync(join(directory, 'js'), { recursive: true });
      writeFileSync(join(directory, 'index.html'), '<!doctype html><title>t</title>');
      writeFileSync(join(directory, 'js', 'main.js'), 'export {};');
      writeFileSync(join(directory, '.secret'), 'no');
    });

    it('serves the page and its scripts at /dashboard/ with the dashboard policy', async () => {
      const page = await request(h.app).get('/dashboard/').expect(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toBe(DASHBOARD_CSP);
      expect(DASHBOARD_CSP).not.toMatch(/unsafe/);
      expect(page.headers['x-frame-options']).toBe('DENY');
      const script = await request(h.app).get('/dashboard/js/main.js').expect(200);
      expect(script.headers['content-type']).toMatch(/^text\/javascript|^application\/javascript/);
    });

    it('redirects /dashboard to /dashboard/', async () => {
      const res = await request(h.app).get('/dashboard').expect(301);
      expect(res.headers.location).toBe('/dashboard/');
    });

    it('leaves unknown files, dot files, escapes and other methods to the API: 404 JSON with its own policy', async () => {
      for (const res of [
        await request(h.app).get('/dashboard/nothing.js'),
        await request(h.app).get('/dashboard/.secret'),
        await request(h.app).get('/dashboard/..%2f..%2fpackage.json'),
        await request(h.app).post('/dashboard/'),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ detail: 'Not found.' });
        expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
      }
    });

    it('refuses a Host the API does not answer for, as the API does', async () => {
      await request(h.app).get('/dashboard/').set('Host', 'attacker.example.net').expect(400);
    });

    it('is not served when not configured', async () => {
      await request(without.app).get('/dashboard/').expect(404);
    });
  });
});
