import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, startServer, type RunningServer } from '../src';
import { describeWithSandbox } from '../../scheduler-process/test/support/sandbox';
import { ApiClient, inlineNode, signUp, testUidRange, type Session } from './support';

jest.setTimeout(120_000);

const uidRange = testUidRange();

/**
 * The app of this test: answers `<release> <instance> <body>` (an id of its own per process:
 * pids are those of each sandbox's namespace) after a short delay (so that
 * requests are in flight when a deploy stops it), and on SIGTERM stops accepting and
 * finishes what it is answering, as a well-behaved web process does.
 */
const APP_JS = `
const http = require('http');
const instance = require('crypto').randomUUID();
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => setTimeout(() => res.end(process.env.SVC_RELEASE + ' ' + instance + ' ' + body + ' ' + (req.headers['x-forwarded-for'] || '')), 20));
});
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

/** Sends a request through the router; network failures count as status 0. */
function viaRouter(port: number, method: 'GET' | 'POST', body = ''): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, method, path: '/', headers: { Host: 'myapp.localhost', 'Content-Length': String(Buffer.byteLength(body)) }, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', () => resolve({ status: 0, text }));
      },
    );
    req.on('error', () => resolve({ status: 0, text: '' }));
    req.end(body);
  });
}

describeWithSandbox('the router in front of real app processes', () => {
  let dataDir: string;
  let server: RunningServer;
  let alice: Session;
  let port: number;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-router-server-'));
    const config = loadConfig({
      SCHEDULER: 'process',
      PROCESS_PORT_RANGE: '44000-44999',
      SANDBOX_UID_RANGE: uidRange,
      HEALTHCHECK_TIMEOUT: '30',
      PROCESS_STOP_TIMEOUT_SECONDS: '5',
      GIT_SSH_PORT: 'off',
      ROUTER_PORT: '0',
      // One worker process: turns are kept per worker, and this test checks them in order.
      ROUTER_WORKERS: '1',
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
    });
    server = await startServer(config, pino({ level: 'silent' }));
    port = server.routerPort ?? 0;
    alice = await signUp(new ApiClient(server.url), 'alice');
    expect((await alice.api.post('/v1/apps/', { id: 'myapp' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('reaches the app, in turn across its web processes, through every deploy without dropping a request, and answers 503 once it is scaled to zero', async () => {
    expect((await viaRouter(port, 'GET')).status).toBe(503);
    const web = inlineNode(APP_JS);
    expect((await alice.api.post('/v1/apps/myapp/builds/', { image: 'example/myapp:v1', procfile: { web } })).status).toBe(201);

    const first = await viaRouter(port, 'POST', 'hello');
    expect(first.status).toBe(200);
    expect(first.text).toMatch(/^v2 [0-9a-f-]{36} hello 127\.0\.0\.1$/);

    // Two web processes answer in turn.
    expect((await alice.api.post('/v1/apps/myapp/scale/', { web: 2 })).status).toBe(204);
    // The router learns of the second process within its route refresh (the scale refreshes it at once, asynchronously).
    const seen = new Set<string>();
    for (let i = 0; i < 100 && seen.size < 2; i++) {
      seen.add((await viaRouter(port, 'GET')).text.split(' ')[1] ?? '');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const pids = [];
    for (let i = 0; i < 4; i++) pids.push((await viaRouter(port, 'GET')).text.split(' ')[1]);
    expect(new Set(pids).size).toBe(2);
    expect(pids[0]).toBe(pids[2]);
    expect(pids[1]).toBe(pids[3]);

    // A config change replaces both processes while clients keep sending requests.
    let deploying = true;
    const outcomes: Array<{ status: number; text: string }> = [];
    const clients = Array.from({ length: 4 }, async (_, c) => {
      let n = 0;
      while (deploying) {
        n += 1;
        outcomes.push(await viaRouter(port, n % 2 === 0 ? 'GET' : 'POST', `c${c}-${n}`));
      }
    });
    const change = await alice.api.post('/v1/apps/myapp/config/', { values: { GREETING: 'bonjour' } });
    // Keep going a little after the deploy returned: the old processes are being stopped now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    deploying = false;
    await Promise.all(clients);

    expect(change.status).toBe(201);
    expect(outcomes.length).toBeGreaterThan(20);
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(new Set(outcomes.map((o) => o.text.split(' ')[0]))).toEqual(new Set(['v2', 'v3']));
    expect((await viaRouter(port, 'GET')).text).toMatch(/^v3 /);

    expect((await alice.api.post('/v1/apps/myapp/scale/', { web: 0 })).status).toBe(204);
    expect(await viaRouter(port, 'GET')).toEqual({ status: 503, text: 'No web process of myapp is running.\n' });
  });
});
