import { request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import request from 'supertest';
import type { LogEntry } from '@svc/core';
import { adminAndAlice, auth, createApp, harness, signUp, type Harness, type HarnessOptions } from './harness';

/** A follow request in progress: what arrived so far, and how to hang up. */
interface Follower {
  response: IncomingMessage;
  text(): string;
  ended: Promise<void>;
  close(): void;
}

async function eventually(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const line = (second: number, message: string): LogEntry => ({
  time: new Date(Date.UTC(2026, 10, 21, 10, 0, second)),
  source: 'myapp[web.1]',
  message,
});

describe('GET /v1/apps/<id>/logs?follow=true', () => {
  let h: Harness;
  let server: Server;
  let port: number;
  let alice: string;
  let shutdown: AbortController;

  async function start(options: HarnessOptions = {}): Promise<void> {
    shutdown = new AbortController();
    h = harness({ shutdown: shutdown.signal, ...options });
    ({ alice } = await adminAndAlice(h.app));
    await createApp(h.app, alice, 'myapp');
    server = h.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    port = (server.address() as AddressInfo).port;
  }

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function follow(query: string, headers: Record<string, string> = {}, token = alice): Promise<Follower> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: `/v1/apps/myapp/logs${query}`, headers: { Authorization: auth(token), ...headers } });
      req.once('error', reject);
      req.once('response', (response) => {
        let received = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          received += chunk;
        });
        const ended = new Promise<void>((done) => {
          response.once('end', () => done());
          response.once('close', () => done());
        });
        resolve({ response, text: () => received, ended, close: () => req.destroy() });
      });
      req.end();
    });
  }

  it('streams the last lines, then each new line as it is appended, as chunked text/plain', async () => {
    await start();
    await h.logs.append('myapp', [line(1, 'booting')]);

    const f = await follow('?follow=true&log_lines=2');
    await eventually(() => f.text().split('\n').length === 3, 'the first two lines arrived');
    const first = f.text();
    await h.logs.append('myapp', [line(2, 'listening on 5000')]);
    await eventually(() => f.text().includes('listening on 5000'), 'the new line arrived');

    expect(f.response.statusCode).toBe(200);
    expect(f.response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(f.response.headers['transfer-encoding']).toBe('chunked');
    expect(f.response.headers['cache-control']).toBe('no-cache');
    expect(first).toBe('2026-11-21T10:00:00UTC svc[api]: alice created initial release\n2026-11-21T10:00:01UTC myapp[web.1]: booting\n');
    expect(f.text()).toBe(`${first}2026-11-21T10:00:02UTC myapp[web.1]: listening on 5000\n`);
    f.close();
  });

  it('unsubscribes from the log when the client disconnects', async () => {
    await start();
    const f = await follow('?follow=true');
    await eventually(() => f.text().length > 0, 'the first lines arrived');
    expect(h.logs.listenerCount('myapp')).toBe(1);

    f.close();

    await eventually(() => h.logs.listenerCount('myapp') === 0, 'the stream unsubscribed');
    await h.logs.append('myapp', [line(3, 'nobody listens')]);
    expect(h.logs.listenerCount('myapp')).toBe(0);
  });

  it('logs the request line when the client hangs up, marked as aborted', async () => {
    await start();
    const f = await follow('?follow=true');
    await eventually(() => f.text().length > 0, 'the first lines arrived');

    f.close();

    await eventually(() => h.logger.at('info').some((e) => (e.obj as { path?: string }).path === '/v1/apps/myapp/logs'), 'the request was logged');
    const entry = h.logger.at('info').find((e) => (e.obj as { path?: string }).path === '/v1/apps/myapp/logs');
    expect(entry?.obj).toMatchObject({ status: 200, aborted: true, method: 'GET' });
  });

  it.each([['1.0'], ['1.6']])('is text/plain lines at %s as well, where the plain logs are a JSON string', async (version) => {
    await start();

    const f = await follow('?follow=true', { SVC_API_VERSION: version });
    await eventually(() => f.text().length > 0, 'the first lines arrived');

    expect(f.response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(f.text()).toBe('2026-11-21T10:00:00UTC svc[api]: alice created initial release\n');
    f.close();
  });

  it('honours log_lines from 1.3 only, as the plain logs do', async () => {
    await start();
    await h.logs.append('myapp', [line(1, 'one'), line(2, 'two')]);

    const old = await follow('?follow=true&log_lines=1', { SVC_API_VERSION: '1.2' });
    const recent = await follow('?follow=true&log_lines=1', { SVC_API_VERSION: '1.3' });
    await eventually(() => old.text().split('\n').length === 4 && recent.text().length > 0, 'the first lines arrived');

    expect(recent.text()).toBe('2026-11-21T10:00:02UTC myapp[web.1]: two\n');
    expect(old.text().split('\n').filter((l) => l !== '')).toHaveLength(3);
    old.close();
    recent.close();
  });

  it('a follow=false request answers the plain logs; an unreadable follow is 400 on the field', async () => {
    await start();

    const plain = await request(h.app).get('/v1/apps/myapp/logs?follow=false').set('Authorization', auth(alice)).expect(200);
    const bad = await request(h.app).get('/v1/apps/myapp/logs?follow=maybe').set('Authorization', auth(alice)).expect(400);

    expect(plain.text).toBe('2026-11-21T10:00:00UTC svc[api]: alice created initial release\n');
    expect(bad.body).toEqual({ follow: ['Must be a valid boolean.'] });
    expect(h.logs.listenerCount('myapp')).toBe(0);
  });

  it('answers 404 to a user who may not see the app, 401 without a token, and subscribes nothing', async () => {
    await start();
    const bob = await signUp(h.app, 'bob');

    const hidden = await request(h.app).get('/v1/apps/myapp/logs?follow=true').set('Authorization', auth(bob)).expect(404);
    await request(h.app).get('/v1/apps/myapp/logs?follow=true').expect(401);

    expect(hidden.body).toEqual({ detail: 'Not found.' });
    expect(h.logs.listenerCount('myapp')).toBe(0);
  });

  it('ends open streams when the server shuts down', async () => {
    await start();
    const f = await follow('?follow=true');
    await eventually(() => f.text().length > 0, 'the first lines arrived');

    shutdown.abort();
    await f.ended;

    expect(f.response.complete).toBe(true);
    expect(h.logs.listenerCount('myapp')).toBe(0);
  });

  it('a client that stops reading costs at most the buffer: lines past it are skipped and a marker says how many', async () => {
    await start({ followBufferBytes: 64 * 1024 });
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.write(`GET /v1/apps/myapp/logs?follow=true&log_lines=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth(alice)}\r\n\r\n`);
    await eventually(() => received.includes('created initial release'), 'the first line arrived');
    socket.pause();

    // 48 MiB: far more than the socket buffers of both ends can hold.
    const payload = 'x'.repeat(1000);
    const batches = 96;
    const perBatch = 512;
    for (let b = 0; b < batches; b++) {
      await h.logs.append(
        'myapp',
        Array.from({ length: perBatch }, (_, i) => line(3, `${String(b * perBatch + i).padStart(6, '0')} ${payload}`)),
      );
    }
    socket.resume();
    await eventually(() => received.includes('lines skipped'), 'the marker arrived', 20_000);
    await h.logs.append('myapp', [line(4, 'the end')]);
    await eventually(() => received.includes('the end'), 'the last line arrived', 20_000);
    socket.destroy();

    const body = received.slice(received.indexOf('\r\n\r\n') + 4);
    const numbers = [...body.matchAll(/myapp\[web\.1\]: (\d{6}) x/g)].map((m) => Number(m[1]));
    const marker = /svc\[logs\]: (\d+) lines skipped/.exec(body);
    expect(marker).not.toBeNull();
    const skipped = Number(marker?.[1]);
    // Every line was either delivered, in order, or counted in the marker.
    expect(numbers.length + skipped).toBe(batches * perBatch);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(skipped).toBeGreaterThan(batches * perBatch / 2);
    await eventually(() => h.logs.listenerCount('myapp') === 0, 'the stream unsubscribed');
  }, 60_000);
});
