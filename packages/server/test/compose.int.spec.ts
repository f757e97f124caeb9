import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { WorkingCopy, keyPair, nodeApp, type KeyPair } from '../../builder-git/test/support/git-client';
import { ApiClient, signUp, viaRouter, type Session } from './support';
import { buildControllerImage } from './support/controller-image';

/*
 * The offline production path: compose.yaml run by Debian's docker-compose (v1) on a Docker
 * engine (TEST_DOCKER_HOST) with images made on this machine, no registry involved: the
 * controller image (scripts/make-node-base.sh, scripts/build-image.sh --prebuilt, tagged for
 * the router too), the stack image (scripts/make-stack-image.sh) and PostgreSQL 15 from
 * Debian's packages (scripts/make-postgres-image.sh). TEST_CONTROLLER_IMAGE and
 * TEST_POSTGRES_IMAGE name images already made. As a second installation on a shared engine
 * would, it sets its own instance, network, bridge and ports through compose.yaml's variables
 * (no override file). The controller must become healthy by its HEALTHCHECK (/readyz: builds
 * can run, the networks' guards installed through the engine), take `git push` of the README's
 * Node.js app (an npm dependency, no Procfile) and of a Procfile app and serve both through the
 * router service, be upgraded to a new image with `up -d` under load without one failed app
 * request, keep its data in the PostgreSQL container across a restart, and leave no container,
 * network or iptables rule of its own behind after the teardown in its image.
 */

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const ENGINE = process.env.TEST_DOCKER_HOST?.trim() ? process.env.TEST_DOCKER_HOST.trim() : null;
// Making the images takes minutes on a busy two-core machine (debootstrap, the controller build).
const BUILD_TIMEOUT_MS = 15 * 60_000;

async function has(program: string): Promise<boolean> {
  try {
    await run(program, ['version']);
    return true;
  } catch {
    return false;
  }
}

function describeWithEngine(title: string, body: () => void): void {
  if (ENGINE !== null) {
    describe(title, body);
  } else if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs a Docker engine: TEST_DOCKER_HOST is not set under CI=true', () => {
        throw new Error('TEST_DOCKER_HOST is not set: CI must start a Docker engine for the compose test');
      });
    });
  } else {
    process.stdout.write(`${title}: not run, set TEST_DOCKER_HOST to run compose.yaml with images made offline.\n`);
    describe.skip(`${title} (skipped: TEST_DOCKER_HOST is not set)`, body);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== null) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${last === null ? '' : ` (${String(last)})`}`);
}

describeWithEngine('compose.yaml without a registry (docker-compose, images made offline)', () => {
  const suffix = randomBytes(3).toString('hex');
  const project = `svccompose${suffix}`;
  const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_HOST: ENGINE ?? '' };
  const made: string[] = [];
  let work = '';
  let api = '';
  let routerPort = 0;
  let gitPort = 0;
  let alice: Session;
  let key: KeyPair;

  const docker = async (...args: string[]): Promise<string> =>
    (await run('docker', args, { env, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
  const script = async (name: string, ...args: string[]): Promise<void> => {
    await run(join(ROOT, 'scripts', name), args, { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024, timeout: BUILD_TIMEOUT_MS });
  };
  const compose = async (...args: string[]): Promise<string> =>
    (await run('docker-compose', ['-p', project, '-f', join(ROOT, 'compose.yaml'), ...args], { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024, timeout: 5 * 60_000 })).stdout.trim();
  const containerOf = async (service: string): Promise<string> => compose('ps', '-q', service);
  const health = async (service: string): Promise<string> => docker('inspect', '-f', '{{.State.Health.Status}}', await containerOf(service));
  const healthy = async (service: string, timeoutMs: number): Promise<void> => {
    await waitFor(`${service} healthy`, timeoutMs, async () => ((await health(service)) === 'healthy' ? true : null)).catch(async (error: Error) => {
      // Why it is not healthy: the service's last log lines, in the failure itself.
      const logs = await compose('logs', '--no-color', '--tail', '60', service).catch((reason: unknown) => `(no logs: ${String(reason)})`);
      throw new Error(`${error.message}\n${service}'s last log lines:\n${logs}`);
    });
  };
  /** Pushes `files` as a new app `id` over git and ssh to the controller's git port; resolves with git's output. */
  const pushApp = async (id: string, files: Record<string, string>): Promise<string> => {
    expect((await alice.api.post('/v1/apps/', { id })).status).toBe(201);
    const copy = await WorkingCopy.init(join(work, id), join(work, `${id}-home`), key);
    await copy.commit(files, 'first version');
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${gitPort}/${id}.git`]);
    const outcome = await copy.git(['push', 'svc', 'main']);
    const output = `${outcome.stdout}${outcome.stderr}`;
    if (outcome.code !== 0) {
      const logs = await compose('logs', '--no-color', '--tail', '40', 'controller').catch(() => '');
      throw new Error(`git push of ${id} exited ${outcome.code}:\n${output}\ncontroller's last log lines:\n${logs}`);
    }
    return output;
  };

  beforeAll(async () => {
    if (!(await has('docker-compose'))) {
      throw new Error('docker-compose is missing: apt-get install docker-compose (Debian bookworm: v1.29)');
    }
    work = mkdtempSync(join(tmpdir(), 'svc-compose-'));

    let controllerImage = process.env.TEST_CONTROLLER_IMAGE?.trim() ?? '';
    if (controllerImage === '') {
      controllerImage = `svc-compose-test/controller:${suffix}`;
      // A base of its own unless one is named: another test file may be using (or removing) one of a shared name.
      let base = process.env.TEST_NODE_BASE_IMAGE?.trim() ?? '';
      if (base === '') {
        base = `svc-compose-test/node-base:${suffix}`;
        await script('make-node-base.sh', base);
        made.push(base);
      }
      await buildControllerImage(() => script('build-image.sh', '--prebuilt', '--base', base, '-t', controllerImage));
      made.push(controllerImage);
    }
    // The router service's own tag (compose.yaml), so that a new controller image leaves it running.
    const routerImage = `svc-compose-test/router:${suffix}`;
    await docker('tag', controllerImage, routerImage);
    made.push(routerImage);
    const stackImage = `localhost/svc-compose-test-stack:${suffix}`;
    await script('make-stack-image.sh', stackImage);
    made.push(stackImage);
    let postgresImage = process.env.TEST_POSTGRES_IMAGE?.trim() ?? '';
    if (postgresImage === '') {
      postgresImage = `svc-compose-test/postgres:${suffix}`;
      await script('make-postgres-image.sh', postgresImage);
      made.push(postgresImage);
    }

    const apiPort = await freePort();
    [routerPort, gitPort] = [await freePort(), await freePort()];
    const socket = ENGINE?.replace(/^unix:\/\//, '') ?? '';
    // A second installation's names and ports, through compose.yaml's own variables only.
    Object.assign(env, {
      SECRET_KEY: randomBytes(32).toString('hex'),
      POSTGRES_PASSWORD: randomBytes(16).toString('hex'),
      POSTGRES_PORT: String(await freePort()),
      POSTGRES_IMAGE: postgresImage,
      SVC_IMAGE: controllerImage,
      ROUTER_IMAGE: routerImage,
      STACK_IMAGE: stackImage,
      DOCKER_INSTANCE: project,
      DOCKER_NETWORK: project,
      DOCKER_BRIDGE: `svcc${suffix}`,
      // Its own build network too: its teardown removes it, with the builds on it.
      BUILDPACK_NETWORK: `${project}-build`,
      BUILDPACK_BRIDGE: `svccb${suffix}`,
      PORT: String(apiPort),
      ROUTER_PORT: String(routerPort),
      GIT_SSH_PORT: String(gitPort),
      DOCKER_SOCKET: socket,
      DOCKER_GID: String(statSync(socket).gid),
    });
    api = `http://127.0.0.1:${apiPort}`;
    await compose('up', '-d', '--no-build');
  }, BUILD_TIMEOUT_MS * 2);

  afterAll(async () => {
    if (work !== '') {
      await compose('down', '-v', '--timeout', '10').catch(() => undefined);
      // The apps' containers are the engine's, not compose's; then the networks they were on.
      const apps = await docker('ps', '-aq', '--filter', `label=svc.instance=${project}`).catch(() => '');
      if (apps !== '') await docker('rm', '-f', ...apps.split('\n')).catch(() => undefined);
      await docker('network', 'rm', project).catch(() => undefined);
      await docker('network', 'rm', `${project}-build`).catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    }
    for (const image of made.reverse()) await docker('image', 'rm', '-f', image).catch(() => undefined);
  }, 5 * 60_000);

  it('PostgreSQL from Debian\'s packages, the router and the controller all become healthy; /readyz answers ready', async () => {
    await healthy('postgres', 120_000);
    await healthy('controller', 180_000);
    await healthy('router', 60_000);
    const ready = await fetch(`${api}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });
  }, 6 * 60_000);

  it('takes git push of the README\'s Node.js app (an npm dependency, no Procfile) and of a Procfile app, and serves both through the router', async () => {
    alice = await signUp(new ApiClient(api), 'alice');
    key = await keyPair(work, 'alice');
    expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: key.publicKey })).status).toBe(201);

    const manifest = { name: 'myapp', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { ms: '2.1.3' } };
    const lockDir = join(work, 'lock');
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: lockDir, timeout: 180_000 });
    const nodeOutput = await pushApp('myapp', {
      'package.json': readFileSync(join(lockDir, 'package.json'), 'utf8'),
      'package-lock.json': readFileSync(join(lockDir, 'package-lock.json'), 'utf8'),
      'server.js': "require('node:http').createServer((q, s) => s.end('hello, ' + require('ms')(60000) + '\\n')).listen(process.env.PORT);\n",
    });
    expect(nodeOutput).toMatch(/Released v\d+/);
    const procfileOutput = await pushApp('procapp', nodeApp('hello from a Procfile'));
    expect(procfileOutput).toMatch(/Released v\d+/);

    for (const [id, text] of [['myapp', 'hello, 1m\n'], ['procapp', 'hello from a Procfile\n']] as const) {
      const answer = await waitFor(`${id} through the router`, 60_000, async () => {
        const reply = await viaRouter(routerPort, id);
        return reply.status === 200 ? reply : null;
      });
      expect(answer.text).toBe(text);
    }
  }, 15 * 60_000);

  it('upgrades the controller to a new image with `up -d` under load without one failed app request; the router keeps running', async () => {
    const routerBefore = await containerOf('router');
    const controllerBefore = await containerOf('controller');
    // A new controller image: the same files, another image id (as a new version would be).
    const upgraded = `svc-compose-test/controller:${suffix}-next`;
    writeFileSync(join(work, 'Dockerfile.next'), `FROM ${env.SVC_IMAGE}\nLABEL org.svc.test.upgrade=${suffix}\n`);
    await docker('build', '-q', '-f', join(work, 'Dockerfile.next'), '-t', upgraded, work);
    made.push(upgraded);
    env.SVC_IMAGE = upgraded;

    let running = true;
    const failures: string[] = [];
    let answered = 0;
    const client = async (): Promise<void> => {
      while (running) {
        const reply = await viaRouter(routerPort, 'myapp');
        if (reply.status === 200 && reply.text === 'hello, 1m\n') answered += 1;
        else failures.push(`${reply.status} ${reply.error ?? reply.text.slice(0, 120)}`);
      }
    };
    const clients = Array.from({ length: 8 }, () => client());
    try {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      await compose('up', '-d', '--no-build');
      await healthy('controller', 180_000);
      // Requests go on a while after the new controller serves the router.
      await new Promise((resolve) => setTimeout(resolve, 3000));
    } finally {
      running = false;
      await Promise.all(clients);
    }
    expect(await containerOf('controller')).not.toBe(controllerBefore);
    expect(await containerOf('router')).toBe(routerBefore);
    process.stdout.write(`compose upgrade under load: ${answered} requests answered, ${failures.length} failed\n`);
    expect(failures.slice(0, 5)).toEqual([]);
    expect(answered).toBeGreaterThan(100);
  }, 8 * 60_000);

  it('keeps its data in the PostgreSQL container, across a restart of the controller', async () => {
    const users = await compose('exec', '-T', 'postgres', 'psql', '-U', 'svc', '-d', 'svc', '-tAc', 'SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()');
    expect(Number(users)).toBeGreaterThan(5);

    await compose('restart', 'controller');
    await waitFor('controller answers again', 180_000, async () => ((await fetch(`${api}/readyz`)).status === 200 ? true : null));
    const login = await fetch(`${api}/v1/auth/login/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'alice', password: 'alice-Secret1' }),
    });
    expect(login.status).toBe(200);
    expect(await login.json()).toEqual({ token: expect.any(String) });
  }, 6 * 60_000);

  it('is taken off the engine by the teardown in the controller\'s image: the apps\' containers, both networks and their iptables rules go', async () => {
    const bridges = [env.DOCKER_BRIDGE ?? '', env.BUILDPACK_BRIDGE ?? ''];
    const rulesOf = async (bridge: string): Promise<string[]> => (await run('iptables', ['-w', '-S'])).stdout.split('\n').filter((rule) => rule.includes(bridge));
    const appContainers = async (): Promise<string> => docker('ps', '-aq', '--filter', `label=svc.instance=${project}`);
    for (const bridge of bridges) expect((await rulesOf(bridge)).length).toBeGreaterThan(0);
    expect(await appContainers()).not.toBe('');

    await compose('stop', 'controller');
    const said = await compose('run', '--rm', '--no-deps', 'controller', 'node', 'packages/server/dist/teardown.js', '--yes');
    expect(said).toContain(`the network ${project} and its guard`);
    expect(said).toContain(`Removed the build network ${project}-build and its guards.`);
    for (const bridge of bridges) expect(await rulesOf(bridge)).toEqual([]);
    expect(await appContainers()).toBe('');
    await expect(docker('network', 'inspect', project)).rejects.toThrow();
    await expect(docker('network', 'inspect', `${project}-build`)).rejects.toThrow();
  }, 5 * 60_000);
});
