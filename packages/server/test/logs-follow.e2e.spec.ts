import { mkdtemp, rm } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient, describeEachBackend, signUp, startTestServer, type Session, type TestServer } from './support';

/** A follow request in progress. */
interface Follower {
  response: IncomingMessage;
  text(): string;
  ended: Promise<void>;
  close(): void;
}

function follow(baseUrl: string, token: string, query = '?follow=true'): Promise<Follower> {
  return new Promise((resolve, reject) => {
    const url = new URL(`/v1/apps/myapp/logs/${query}`, baseUrl);
    const req = request(url, { headers: { Authorization: `token ${token}` } });
    req.once('error', reject);
    req.once('response', (response) => {
      let received = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        received += chunk;
      });
      response.on('error', () => undefined);
      const ended = new Promise<void>((done) => response.once('close', () => done()));
      resolve({ response, text: () => received, ended, close: () => req.destroy() });
    });
    req.end();
  });
}

async function eventually(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describeEachBackend('following an app log', (backend) => {
  let server: TestServer;
  let alice: Session;

  beforeAll(async () => {
    server = await startTestServer(await backend.newStore());
    alice = await signUp(server.api, 'alice');
    expect((await alice.api.post('/v1/apps/', { id: 'myapp' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('streams the last lines, then the lines of events that happen after the request started', async () => {
    const f = await follow(server.url, alice.token, '?follow=true&log_lines=1');
    await eventually(() => f.text().includes('created initial release'), 'the first line arrived');

    expect((await alice.api.post('/v1/apps/myapp/config/', { values: { FOO: 'bar' } })).status).toBe(201);
    await eventually(() => f.text().includes('alice added FOO'), 'the config event arrived');
    f.close();

    expect(f.response.statusCode).toBe(200);
    expect(f.response.headers['content-type']).toBe('text/plain; charset=utf-8');
    const lines = f.text().split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}UTC svc\[api\]: alice created initial release$/);
    expect(lines[1]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}UTC svc\[api\]: alice added FOO$/);
  });

  it('answers 404 to a user who may not see the app, as the plain logs do', async () => {
    const bob = await signUp(server.api, 'bob');

    const f = await follow(server.url, bob.token);
    await f.ended;

    expect(f.response.statusCode).toBe(404);
    expect(JSON.parse(f.text())).toEqual({ detail: 'Not found.' });
  });

  if (backend.name === 'postgresql') {
    it('a follower of one controller process hears of the events handled by another sharing the database', async () => {
      // Another controller process: the same database, a data directory of its own (one controller per data directory).
      const otherDir = await mkdtemp(join(tmpdir(), 'svc-e2e-other-'));
      const other = await startTestServer({ ...server.store, dataDir: otherDir });
      try {
        const f = await follow(server.url, alice.token, '?follow=true&log_lines=1');
        await eventually(() => f.text() !== '', 'the first line arrived');

        const change = await new ApiClient(other.url, alice.token).post('/v1/apps/myapp/config/', { values: { FROM_OTHER: '1' } });
        expect(change.status).toBe(201);
        await eventually(() => f.text().includes('alice added FROM_OTHER'), 'the other process\'s event arrived');
        f.close();

        expect(f.text().split('\n').filter((l) => l.includes('FROM_OTHER'))).toHaveLength(1);
      } finally {
        await other.close();
        await rm(otherDir, { recursive: true, force: true });
      }
    });
  }
});

describeEachBackend('stopping a server with followers', (backend) => {
  it('ends open follow streams at once instead of waiting for the shutdown timeout', async () => {
    const server = await startTestServer(await backend.newStore(), { SHUTDOWN_TIMEOUT_MS: '20000' });
    const alice = await signUp(server.api, 'alice');
    expect((await alice.api.post('/v1/apps/', { id: 'myapp' })).status).toBe(201);
    const f = await follow(server.url, alice.token);
    await eventually(() => f.text() !== '', 'the first line arrived');

    const started = Date.now();
    await server.close();
    await f.ended;

    expect(Date.now() - started).toBeLessThan(5000);
    expect(f.response.complete).toBe(true);
  });
});
