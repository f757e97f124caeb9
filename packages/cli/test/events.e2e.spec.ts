import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../server/test/support';
import { signUp } from '../../server/test/support/users';
import { parseSseFrame } from '../src/commands/events';
import { CliRunner, compileClient } from './support/cli';

jest.setTimeout(120_000);

describe('svc events and svc webhooks:*, against a running controller', () => {
  let server: TestServer;
  let build: { main: string; remove: () => void };
  let root: string;
  let svc: CliRunner;
  let token: string;
  let receiver: Server;
  let receiverUrl: string;
  const got: Array<{ headers: IncomingMessage['headers']; body: string }> = [];

  beforeAll(async () => {
    build = compileClient();
    root = await mkdtemp(join(tmpdir(), 'svc-cli-events-'));
    server = await startTestServer({ dataDir: root }, { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_SECONDS: '1' });
    const alice = await signUp(server.api, 'alice');
    token = alice.token;
    expect((await alice.api.post('/v1/apps/', { id: 'shop' })).status).toBe(201);
    svc = new CliRunner(build.main, { PATH: process.env.PATH, HOME: root, SVC_URL: server.url, SVC_TOKEN: token });
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        got.push({ headers: req.headers, body });
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });

  afterAll(async () => {
    receiver?.close();
    await server?.close();
    build?.remove();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  it('lists the journal with filters', async () => {
    const events = JSON.parse(await svc.ok(['events', '--json', '--action', 'app'])) as Array<{ action: string; app: string }>;
    expect(events).toEqual([expect.objectContaining({ action: 'app.create', app: 'shop' })]);
    expect(await svc.ok(['events', '--app', 'shop'])).toMatch(/alice\s+app\.create\s+shop\s+alice created shop/);
    const bad = await svc.run(['events', '--since', 'tomorrow']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/since/);
  });

  it('adds a webhook, shows its deliveries, and removes it', async () => {
    const added = JSON.parse(await svc.ok(['webhooks:add', receiverUrl, '--events', 'config,scale', '--app', 'shop', '--json'])) as { uuid: string; secret: string };
    expect(added.secret.length).toBeGreaterThanOrEqual(16);
    expect(await svc.ok(['webhooks', '--app', 'shop'])).toContain(receiverUrl);
    expect(await svc.ok(['webhooks:info', added.uuid, '--app', 'shop'])).toMatch(/events:\s+config, scale/);
    expect(await svc.ok(['webhooks:info', added.uuid, '--app', 'shop'])).toMatch(/status:\s+active/);
    expect((await server.api.as(token).post('/v1/apps/shop/config/', { values: { A: '1' } })).status).toBe(201);
    for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(got[0]?.headers['svc-webhook-hmac-sha256']).toBe(createHmac('sha256', added.secret).update(got[0]?.body ?? '').digest('base64'));
    let table = '';
    for (let i = 0; i < 50 && !/delivered/.test(table); i++) {
      table = await svc.ok(['webhooks:deliveries', added.uuid, '--app', 'shop']);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(table).toMatch(/config\.update\s+delivered\s+1\s+200/);
    expect(await svc.ok(['webhooks:remove', added.uuid, '--app', 'shop'])).toContain('Removed');
    expect((await svc.run(['webhooks:info', added.uuid, '--app', 'shop'])).code).toBe(1);
    expect((await svc.run(['webhooks:add', receiverUrl, '--app', 'shop'])).code).toBe(2);
  });

  it('follows an app\'s events as they happen', async () => {
    const child = svc.spawn(['events', '--follow', '--app', 'shop', '--json']);
    child.stdin.end();
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect((await server.api.as(token).post('/v1/apps/shop/config/', { values: { FOLLOWED: '1' } })).status).toBe(201);
      for (let i = 0; i < 100 && out.split('\n').filter(Boolean).length < 2; i++) await new Promise((r) => setTimeout(r, 100));
      const lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { action: string; summary: string });
      expect(lines.map((l) => l.action)).toEqual(['config.update', 'release.create']);
      expect(lines[0]?.summary).toContain('FOLLOWED');
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('parses Server-Sent Events frames', () => {
    expect(parseSseFrame('id: 1\nevent: x\ndata: {"a":1}')).toEqual({ id: '1', event: 'x', data: '{"a":1}' });
    expect(parseSseFrame(': keep-alive')).toBeNull();
    expect(parseSseFrame('data: a\ndata: b')).toEqual({ id: undefined, event: undefined, data: 'a\nb' });
  });
});
