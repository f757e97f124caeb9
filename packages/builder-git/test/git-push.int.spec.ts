import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeOnSqlite, signUp, startTestServer, useServer, type Session } from '../../server/test/support';
import { WorkingCopy, keyPair, nodeApp, run, type KeyPair } from './support/git-client';

/** Builds, newest first, as the API lists them. */
interface BuildJson {
  image: string;
  sha: string;
  procfile: Record<string, string>;
  owner: string;
}

/** What the router answers for `<app>.localhost`, as a browser opening http://<app>.localhost:<router port>/ gets it. */
function throughRouter(routerPort: number, app: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: routerPort, path: '/', headers: { Host: `${app}.localhost:${routerPort}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.trim() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The server's ed25519 host key as `ssh-keyscan` reads it. */
async function hostKeyOf(port: number): Promise<string> {
  const outcome = await run('ssh-keyscan', ['-t', 'ed25519', '-p', String(port), '127.0.0.1']);
  const line = outcome.stdout.split('\n').find((l) => l.includes('ssh-ed25519'));
  if (line === undefined) throw new Error(`ssh-keyscan found no host key: ${outcome.stderr}`);
  return line.slice(line.indexOf('ssh-ed25519'));
}

/**
 * The whole controller (API, database, process scheduler, git server) with the real git and
 * ssh clients: a developer's walk from registering to rolling back.
 */
describeOnSqlite('git push deploys', 'builds and releases recorded in releases.e2e and postgres.int, the build slots in build-slot-store.int', (backend) => {
  // A port range of its own: controllers of other test files running at the same time hand
  // out ports from the default range, and an app must never answer on another's port.
  const ports = 30000 + Math.floor(Math.random() * 50) * 200;
  const env = {
    GIT_SSH_PORT: '0',
    ROUTER_PORT: '0',
    SCHEDULER: 'process',
    BUILD_RETENTION: '5',
    PROCESS_PORT_RANGE: `${ports}-${ports + 199}`,
  };
  const server = useServer(backend, env);
  let root: string;
  let alice: Session;
  let aliceKey: KeyPair;
  let copy: WorkingCopy;
  let first: string;
  let second: string;

  const gitPort = (): number => {
    const port = server.current.gitPort;
    if (port === null) throw new Error('The server runs no git server');
    return port;
  };
  const routerPort = (): number => {
    const port = server.current.routerPort;
    if (port === null) throw new Error('The server runs no router');
    return port;
  };
  const answerOf = async (app: string): Promise<string> => {
    const res = await throughRouter(routerPort(), app);
    expect(res.status).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-git-push-'));
    // The first user registered is the administrator; alice is an ordinary user.
    await signUp(server.api, 'admin');
    alice = await signUp(server.api, 'alice');
    aliceKey = await keyPair(root, 'alice');
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('registers a key and creates an app through the API', async () => {
    const key = await alice.api.post('/v1/keys/', { id: 'laptop', public: aliceKey.publicKey });
    const app = await alice.api.post('/v1/apps/', { id: 'hello' });

    expect({ status: key.status, body: key.body }).toMatchObject({ status: 201, body: { id: 'laptop', fingerprint: expect.stringMatching(/^SHA256:/) } });
    expect({ status: app.status, body: app.body }).toMatchObject({ status: 201, body: { id: 'hello', url: 'hello.localhost' } });

    copy = await WorkingCopy.init(join(root, 'hello'), join(root, 'home'), aliceKey);
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${gitPort()}/hello.git`]);
  });

  it('git push builds and releases the app, and it answers', async () => {
    first = await copy.commit(nodeApp('hello from v1'), 'first');

    const outcome = await copy.git(['push', 'svc', 'main']);

    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toContain(`remote: -----> Building hello from ${first.slice(0, 7)} (main), pushed by alice`);
    expect(outcome.stderr).toContain('remote: -----> Released v2 (web=1)');
    expect(outcome.stderr).toContain(`remote:        http://hello.localhost:${routerPort()}`);
    const builds = await alice.api.get<{ results: BuildJson[] }>('/v1/apps/hello/builds/');
    expect(builds.body.results).toEqual([
      expect.objectContaining({ image: `hello:git-${first.slice(0, 7)}`, sha: first, procfile: { web: 'node server.js' }, owner: 'alice' }),
    ]);
    // Where the checkout lives is the controller's business.
    expect(Object.keys(builds.body.results[0] ?? {}).sort()).toEqual(['app', 'created', 'dockerfile', 'image', 'owner', 'procfile', 'sha', 'updated', 'uuid']);
    const releases = await alice.api.get<{ results: Array<{ version: number; summary: string }> }>('/v1/apps/hello/releases/');
    expect(releases.body.results[0]).toMatchObject({ version: 2, summary: `alice deployed ${first.slice(0, 7)}` });
    const containers = await alice.api.get<{ results: Array<{ type: string; state: string; release: string }> }>('/v1/apps/hello/containers/');
    expect(containers.body.results).toEqual([expect.objectContaining({ type: 'web', state: 'up', release: 'v2' })]);
    expect(await answerOf('hello')).toBe('hello from v1');
  });

  it('runs one-off commands in the checkout of the current build', async () => {
    const res = await alice.api.post<[number, string]>('/v1/apps/hello/run/', { command: 'cat Procfile' });

    expect(res.body).toEqual([0, 'web: node server.js\n']);
  });

  it('a second push releases the change', async () => {
    second = await copy.commit(nodeApp('hello from v2'), 'second');

    const outcome = await copy.git(['push', 'svc', 'main']);

    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toContain('remote: -----> Released v3 (web=1)');
    expect(await answerOf('hello')).toBe('hello from v2');
  });

  it('a rollback through the API runs the earlier checkout again', async () => {
    const res = await alice.api.post('/v1/apps/hello/releases/rollback/', { version: 2 });

    expect(res.status).toBe(201);
    expect(res.body).toEqual({ version: 4 });
    expect(await answerOf('hello')).toBe('hello from v1');
  });

  it('refuses a push that cannot be released and keeps the running release', async () => {
    // Without a Procfile and a package.json no buildpack gives a process type to run.
    await copy.expectGit(['rm', '--quiet', 'Procfile', 'package.json']);
    await copy.expectGit(['commit', '--quiet', '-m', 'nothing to run']);

    const outcome = await copy.git(['push', 'svc', 'main']);

    expect(outcome.code).not.toBe(0);
    expect(outcome.stderr).toContain('neither a Procfile nor a Dockerfile');
    const releases = await alice.api.get<{ count: number }>('/v1/apps/hello/releases/');
    expect(releases.body.count).toBe(4);
    expect(await answerOf('hello')).toBe('hello from v1');
    await copy.expectGit(['reset', '--quiet', '--hard', second]);
  });

  it('refuses a stranger with a clear message', async () => {
    const bob = await signUp(server.api, 'bob');
    const bobKey = await keyPair(root, 'bob');
    expect((await bob.api.post('/v1/keys/', { id: 'laptop', public: bobKey.publicKey })).status).toBe(201);
    copy.useKey(bobKey);

    const outcome = await copy.git(['push', 'svc', 'main']);
    copy.useKey(aliceKey);

    expect(outcome.code).not.toBe(0);
    expect(outcome.stderr).toContain('svc: hello.git: no such app, or bob may not use it.');
    expect((await alice.api.get<{ count: number }>('/v1/apps/hello/releases/')).body.count).toBe(4);
  });

  it('refuses a key nobody registered', async () => {
    copy.useKey(await keyPair(root, 'stranger'));

    const outcome = await copy.git(['push', 'svc', 'main']);
    copy.useKey(aliceKey);

    expect(outcome.code).not.toBe(0);
    expect(outcome.stderr).toContain('Permission denied (publickey)');
  });

  it('refuses a key as soon as it is deleted through the API', async () => {
    expect((await copy.git(['ls-remote', 'svc'])).code).toBe(0);

    expect((await alice.api.delete('/v1/keys/laptop')).status).toBe(204);
    const outcome = await copy.git(['ls-remote', 'svc']);

    expect(outcome.code).not.toBe(0);
    expect(outcome.stderr).toContain('Permission denied (publickey)');
  });

  it('a restarted controller starts the released checkout again and keeps its host key', async () => {
    const hostKeyBefore = await hostKeyOf(gitPort());
    const store = server.current.store;
    await server.current.close();

    const again = await startTestServer(store, env);
    try {
      expect(await throughRouter(again.routerPort as number, 'hello')).toEqual({ status: 200, body: 'hello from v1' });
      expect(await hostKeyOf(again.gitPort as number)).toBe(hostKeyBefore);
      const key = await keyPair(root, 'alice-again');
      expect((await again.api.as(alice.token).post('/v1/keys/', { id: 'laptop-2', public: key.publicKey })).status).toBe(201);
      copy.useKey(key);
      const outcome = await copy.git(['ls-remote', `ssh://git@127.0.0.1:${again.gitPort}/hello.git`]);
      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toContain(`${second}\trefs/heads/main`);
    } finally {
      await again.close();
    }
  });
});
