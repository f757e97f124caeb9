import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, startServer, type RunningServer } from '../src';
import { describeWithSandbox } from '../../scheduler-process/test/support/sandbox';
import { ApiClient, inlineNode, signUp, testUidRange, type ContainerJson, type PageJson, type Session } from './support';

jest.setTimeout(120_000);

const uidRange = testUidRange();

/**
 * The app every build of this test runs: says its release, a config value and an id of its
 * own, which it also writes into its command line, so the test finds it among the host's
 * processes (a sandboxed process's pid is its namespace's).
 */
const APP_JS = `
const http = require('http');
const instance = require('crypto').randomUUID();
process.title = 'svc-test-' + instance;
http.createServer((req, res) => {
  if (req.url === '/pid') return res.end(instance);
  res.end(process.env.SVC_RELEASE + ' ' + (process.env.GREETING || '-'));
}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => process.exit(0));
`;

/** Whether a process of the app with this id exists on the host and is not a zombie. */
function isRunning(instance: string): boolean {
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').startsWith(`svc-test-${instance}`)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') return true;
    } catch {
      // Gone meanwhile.
    }
  }
  return false;
}

async function get(url: string): Promise<string> {
  const res = await fetch(url, { headers: { connection: 'close' } });
  return res.text();
}

describeWithSandbox('SCHEDULER=process through the running server', () => {
  let dataDir: string;
  let server: RunningServer | undefined;
  let alice: Session;

  const start = async (): Promise<RunningServer> => {
    const config = loadConfig({
      SCHEDULER: 'process',
      PROCESS_PORT_RANGE: '43000-43999',
      SANDBOX_UID_RANGE: uidRange,
      HEALTHCHECK_TIMEOUT: '30',
      PROCESS_STOP_TIMEOUT_SECONDS: '5',
      GIT_SSH_PORT: 'off',
      ROUTER_PORT: 'off',
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
    });
    server = await startServer(config, pino({ level: 'silent' }));
    return server;
  };
  const running = (): RunningServer => {
    if (!server) throw new Error('no server');
    return server;
  };
  /** What each up web process answers, in container order. */
  const answers = async (path = '/'): Promise<string[]> =>
    Promise.all((running().processScheduler?.endpoints('myapp', 'web') ?? []).map((e) => get(`http://${e.host}:${e.port}${path}`)));
  const pids = async (): Promise<string[]> => answers('/pid');
  const containers = async (): Promise<string[]> => {
    const res = await alice.api.get<PageJson<ContainerJson>>('/v1/apps/myapp/containers/');
    expect(res.status).toBe(200);
    return res.body.results.map((c) => `${c.type}.${c.num}@${c.release}:${c.state}`);
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-process-server-'));
    await start();
    alice = await signUp(new ApiClient(running().url), 'alice');
    expect((await alice.api.post('/v1/apps/', { id: 'myapp' })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('runs a build, scales, deploys config and rollbacks without downtime, runs commands, and survives a controller restart', async () => {
    const web = inlineNode(APP_JS);

    // A build starts web.1, up once it answers on its PORT.
    const build = await alice.api.post('/v1/apps/myapp/builds/', { image: 'example/myapp:v1', procfile: { web } });
    expect(build.status).toBe(201);
    expect(await containers()).toEqual(['web.1@v2:up']);
    expect(await answers()).toEqual(['v2 -']);

    // Scaling to two: both processes answer, each on its own port.
    expect((await alice.api.post('/v1/apps/myapp/scale/', { web: 2 })).status).toBe(204);
    expect(await containers()).toEqual(['web.1@v2:up', 'web.2@v2:up']);
    const endpoints = running().processScheduler?.endpoints('myapp', 'web') ?? [];
    expect(new Set(endpoints.map((e) => e.port)).size).toBe(2);
    expect(await answers()).toEqual(['v2 -', 'v2 -']);
    const v2 = await pids();

    // A config change replaces them: the new ones see the value, the old ones are stopped, and
    // at every moment of the deploy some web process is up and answers.
    let deploying = true;
    const gaps: string[] = [];
    const watch = (async () => {
      while (deploying) {
        const up = running().processScheduler?.endpoints('myapp', 'web') ?? [];
        if (up.length === 0) gaps.push('no web process up');
        else if ((await Promise.all(up.map((e) => get(`http://${e.host}:${e.port}/`).catch(() => null)))).every((a) => a === null)) gaps.push('no answer');
      }
    })();
    const change = await alice.api.post('/v1/apps/myapp/config/', { values: { GREETING: 'bonjour' } });
    deploying = false;
    await watch;
    expect(change.status).toBe(201);
    expect(gaps).toEqual([]);
    expect(await answers()).toEqual(['v3 bonjour', 'v3 bonjour']);
    expect(v2.some(isRunning)).toBe(false);
    expect(await containers()).toEqual(['web.1@v3:up', 'web.2@v3:up']);

    // A build whose web process dies at once is refused with the reason; v3 keeps serving.
    const broken = await alice.api.post('/v1/apps/myapp/builds/', { image: 'example/myapp:v2', procfile: { web: 'echo "no such module"; exit 1' } });
    expect(broken.status).toBe(503);
    expect(broken.body).toEqual({
      detail: 'The scheduler failed to start myapp web.1: it exited with code 1 before it was up; last output: no such module',
    });
    const releases = await alice.api.get<PageJson<{ version: number }>>('/v1/apps/myapp/releases/');
    expect(releases.body.results.map((r) => r.version)).toEqual([3, 2, 1]);
    expect(await answers()).toEqual(['v3 bonjour', 'v3 bonjour']);

    // Rolling back to v2 deploys its config again.
    const rollback = await alice.api.post('/v1/apps/myapp/releases/rollback/', { version: 2 });
    expect(rollback.body).toEqual({ version: 4 });
    expect(await answers()).toEqual(['v4 -', 'v4 -']);

    // Restart replaces the real processes.
    const before = await pids();
    const restart = await alice.api.post<ContainerJson[]>('/v1/apps/myapp/containers/restart/');
    expect(restart.status).toBe(200);
    expect(restart.body.map((c) => `${c.type}.${c.num}:${c.state}`)).toEqual(['web.1:up', 'web.2:up']);
    const after = await pids();
    expect(after.some((pid) => before.includes(pid))).toBe(false);
    expect(before.some(isRunning)).toBe(false);

    // run: the real exit code and output, with the release's environment.
    const run = await alice.api.post<[number, string]>('/v1/apps/myapp/run/', { command: 'echo "$SVC_APP $SVC_RELEASE"; exit 3' });
    expect(run.body).toEqual([3, 'myapp v4\n']);

    // The processes' output is in the app's log.
    const logs = await alice.api.get('/v1/apps/myapp/logs/', { headers: { Accept: 'text/plain' } });
    expect(logs.text).toMatch(/ myapp\[web\.1\]: listening on \d+/);

    // Stopping the controller stops the processes; starting it again on the same data brings them back.
    await running().close();
    expect(after.some(isRunning)).toBe(false);
    await start();
    alice = { ...alice, api: new ApiClient(running().url, alice.token) };
    expect(await answers()).toEqual(['v4 -', 'v4 -']);
    expect(await containers()).toEqual(['web.1@v4:up', 'web.2@v4:up']);
  });

  it('refuses (409) a rollback to an image build or to a release without a build, and the processes keep serving', async () => {
    // An image build has no Procfile command: this scheduler reports its process crashed.
    expect((await alice.api.post('/v1/apps/myapp/builds/', { image: 'example/myapp:image-only' })).status).toBe(201);
    expect(await containers()).toEqual(['cmd.1@v5:crashed']);
    expect((await alice.api.post('/v1/apps/myapp/builds/', { image: 'example/myapp:v3', procfile: { web: inlineNode(APP_JS) } })).status).toBe(201);
    // The image build left the structure at cmd=1, which this build keeps: web serves once scaled.
    expect((await alice.api.post('/v1/apps/myapp/scale/', { web: 1, cmd: 0 })).status).toBe(204);
    expect(await answers()).toEqual(['v6 -']);
    const serving = await pids();

    const image = await alice.api.post('/v1/apps/myapp/releases/rollback/', { version: 5 });
    expect({ status: image.status, body: image.body }).toEqual({
      status: 409,
      body: { detail: expect.stringMatching(/^Release v5 cannot be rolled back to: its build is an image build without a Procfile command, .*docker or swarm scheduler$/) },
    });
    const empty = await alice.api.post('/v1/apps/myapp/releases/rollback/', { version: 1 });
    expect({ status: empty.status, body: empty.body }).toEqual({
      status: 409,
      body: { detail: 'Release v1 has no build: rolling back to it would stop every process of myapp. Releases that can be rolled back to: v2 to v6.' },
    });

    const releases = await alice.api.get<PageJson<{ version: number }>>('/v1/apps/myapp/releases/');
    expect(releases.body.results[0]?.version).toBe(6);
    expect(await containers()).toEqual(['web.1@v6:up']);
    expect(await pids()).toEqual(serving);
  });
});
