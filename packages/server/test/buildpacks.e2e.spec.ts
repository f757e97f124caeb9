import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { LABELS, createEngine, type Docker } from '@svc/scheduler-docker';
import { WorkingCopy, keyPair, type KeyPair } from '../../builder-git/test/support/git-client';
import { sandboxUnavailable } from '../../scheduler-process/test/support/sandbox';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, ownBuildNetwork, removeEngineInstance, signUp, testUidRange, viaRouter, type Session } from './support';
import { serveGitOverHttp, type GitHttpServer } from './support/git-http';
import { goApp, pythonApp, rubyApp } from './support/language-apps';
import { startNpmMirror, type NpmMirror } from './support/npm-mirror';
import { startPythonIndex, type PythonIndex } from '../../buildpacks-git/test/support/python-index';

jest.setTimeout(600_000);

/*
 * git push of real apps with buildpacks, as a new user would, on the process scheduler (the
 * sandbox) and on a Docker engine (on the Debian stack TEST_STACK_IMAGE names, when set): a Node.js app with an npm dependency and a lockfile and no
 * Procfile is detected, compiled and served; a second push reuses the installed modules; a
 * release phase that fails refuses the push with the old version serving; BUILDPACK_URL picks
 * a buildpack from an allowed git URL and is refused for any other; a hostile buildpack's
 * compile reaches the npm registry and nothing of this host or another app; one that writes
 * 1 GiB into BUILD_DIR or CACHE_DIR is stopped at the limit and its push refused with the figures;
 * a static site is served by the stack's static file server; a .buildpacks file runs each buildpack
 * it lists in order; a dependency installs from the operator's mirror on this machine
 * (BUILD_NETWORK_ALLOW), and another port of that machine stays out of reach; a Python app
 * installs its requirements from the operator's index into a virtualenv its web process runs from;
 * a Go module with a vendored dependency builds into its web program; a Ruby app installs its
 * gems from vendor/cache and runs under bundle exec.
 */

const TEST_DOCKER_HOST = process.env.TEST_DOCKER_HOST?.trim() || null;
/** A stack image with the languages (`scripts/make-stack-image.sh --debian`) for the Docker case; else the default busybox stack, which has no Python. */
const TEST_STACK_IMAGE = process.env.TEST_STACK_IMAGE?.trim() || null;

function exec(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** This machine's own non-loopback IPv4 addresses: what a build must not reach. */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a): a is NonNullable<typeof a> => a !== undefined && a.family === 'IPv4' && !a.internal)
    .map((a) => a.address);
}

/** A Node.js app depending on `ms` from the npm registry, with its lockfile, and no Procfile. */
async function nodeAppWithDependency(dir: string, greeting: string): Promise<Record<string, string>> {
  const manifest = { name: 'hello-ms', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { ms: '2.1.3' } };
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await exec('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', '--ignore-scripts'], dir);
  return { 'server.js': serverJs(greeting) };
}

const serverJs = (greeting: string): string =>
  [
    "const ms = require('ms');",
    `require('node:http').createServer((req, res) => res.end(${JSON.stringify(greeting)} + ' ' + ms('2 days') + '\\n')).listen(Number(process.env.PORT));`,
    '',
  ].join('\n');

/** A web process the custom buildpacks leave in the build: prints their marker, then serves PORT. */
const SERVE_JS = "console.log(require('fs').readFileSync('.buildpack-marker', 'utf8').trim()); require('http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT));\n";

/**
 * A buildpack in a bare git repository under `root`: detects everything; its compile runs
 * `compile` (sh), writes a marker and `serve.js` into the build; its release names `web: node serve.js`.
 */
async function buildpackRepository(root: string, name: string, compile: string): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), `svc-bp-${name}-`));
  await mkdir(join(work, 'bin'));
  const scripts: Record<string, string> = {
    detect: '#!/bin/sh\necho Custom\n',
    compile: [
      '#!/bin/sh',
      'set -e',
      compile,
      `echo "compiled by ${name}" > "$1/.buildpack-marker"`,
      `node -e "require('fs').writeFileSync(process.argv[1] + '/serve.js', Buffer.from('${Buffer.from(SERVE_JS).toString('base64')}', 'base64'))" "$1"`,
      '',
    ].join('\n'),
    release: "#!/bin/sh\nprintf -- '---\\ndefault_process_types:\\n  web: node serve.js\\n'\n",
  };
  for (const [file, text] of Object.entries(scripts)) {
    await writeFile(join(work, 'bin', file), text);
    await chmod(join(work, 'bin', file), 0o755);
  }
  const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com', GIT_CONFIG_NOSYSTEM: '1', HOME: work };
  await exec('git', ['init', '-q', '-b', 'main'], work, env);
  await exec('git', ['add', '.'], work, env);
  await exec('git', ['commit', '-q', '-m', 'buildpack'], work, env);
  await exec('git', ['clone', '-q', '--bare', work, join(root, `${name}.git`)], root, env);
  await rm(work, { recursive: true, force: true });
}

/** A compile step that tries every target (`host:port`) and the npm registry, printing one line each. */
const PROBE = (targets: string[]): string => {
  const program = [
    "const net = require('net');",
    `const targets = ${JSON.stringify(targets)};`,
    // In a container, the default gateway of the routing table is the host as the container sees it.
    "let gateway = null; if (require('fs').existsSync('/.dockerenv')) try { const row = require('fs').readFileSync('/proc/net/route', 'utf8').split('\\n').find((l) => l.split('\\t')[1] === '00000000'); if (row) { const hex = row.split('\\t')[2]; gateway = [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.'); } } catch {}",
    "const all = gateway ? [...targets, ...targets.filter((t) => t.startsWith('HOST:')).map((t) => t.replace('HOST', gateway))] : targets;",
    "const tries = all.filter((t) => !t.startsWith('HOST:')).map((t) => new Promise((done) => { const [h, p] = t.split(':'); const s = net.connect({ host: h, port: Number(p), timeout: 3000 }); s.on('connect', () => { console.log('probe ' + t + ' REACHED'); s.destroy(); done(); }); s.on('timeout', () => { console.log('probe ' + t + ' blocked (timeout)'); s.destroy(); done(); }); s.on('error', (e) => { console.log('probe ' + t + ' blocked (' + e.code + ')'); done(); }); }));",
    "tries.push(fetch('https://registry.npmjs.org/ms/2.1.3').then((r) => console.log('probe registry ' + r.status), (e) => console.log('probe registry failed ' + (e.cause && e.cause.code))));",
    'Promise.all(tries);',
  ].join('\n');
  return `node -e "eval(Buffer.from('${Buffer.from(program).toString('base64')}', 'base64').toString())"`;
};

interface Case {
  name: 'process' | 'docker';
  /** Why it cannot run here; null when it can. */
  unavailable: string | null;
  env: () => Record<string, string>;
}

const tag = process.pid.toString(36);
const build = ownBuildNetwork();
const CASES: Case[] = [
  { name: 'process', unavailable: sandboxUnavailable(), env: () => ({ SCHEDULER: 'process', SANDBOX_UID_RANGE: testUidRange(), PROCESS_PORT_RANGE: '41000-41049' }) },
  {
    name: 'docker',
    unavailable: TEST_DOCKER_HOST === null ? 'TEST_DOCKER_HOST is not set (.ci/docker-engine.sh starts an engine)' : null,
    env: () => ({
      SCHEDULER: 'docker',
      DOCKER_HOST: TEST_DOCKER_HOST ?? '',
      DOCKER_NETWORK: `svc-bp-${tag}`,
      DOCKER_BRIDGE: `svcbp${tag}`.slice(0, 15),
      DOCKER_INSTANCE: `bp-${tag}`,
      ...(TEST_STACK_IMAGE === null ? {} : { STACK_IMAGE: TEST_STACK_IMAGE }),
      ...build,
    }),
  },
];

describe.each(CASES)('git push with buildpacks on the $name scheduler', ({ name, unavailable, env }) => {
  if (unavailable !== null && process.env.CI !== 'true') {
    it.skip(`not run: ${unavailable}`, () => undefined);
    return;
  }
  let root: string;
  let git: GitHttpServer;
  let server: RunningServer;
  let alice: Session;
  let key: KeyPair;
  const app = `bp${name.slice(0, 3)}-${tag}`;
  const other = `bpo${name.slice(0, 3)}-${tag}`;
  let copy: WorkingCopy;
  /** The operator's package mirror on this machine (BUILD_NETWORK_ALLOW names it), and one it does not allow. */
  let mirror: NpmMirror;
  let unallowed: NpmMirror;
  /** The operator's Python package index on this machine. */
  let pythonIndex: PythonIndex;
  const mirrorAddress = hostAddresses()[0] ?? '127.0.0.1';
  const push = async (): Promise<{ code: number; output: string }> => {
    const outcome = await copy.git(['push', 'svc', 'main']);
    return { code: outcome.code ?? -1, output: `${outcome.stdout}${outcome.stderr}` };
  };
  const releases = async (id: string): Promise<number> => (await alice.api.get<{ count: number }>(`/v1/apps/${id}/releases/`)).body.count;
  const logContaining = async (id: string, text: string): Promise<string> => {
    let logs = '';
    for (let tries = 0; tries < 50 && !logs.includes(text); tries++) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 200));
      logs = (await alice.api.get(`/v1/apps/${id}/logs/?log_lines=100`)).text;
    }
    return logs;
  };
  /** Creates the app `id` and pushes a first commit of `files` to it from a working copy of its own; the caller deletes the app. */
  const pushToNewApp = async (id: string, files: Record<string, string | Buffer>, config: Record<string, string> = {}): Promise<{ code: number; output: string }> => {
    expect((await alice.api.post('/v1/apps/', { id })).status).toBe(201);
    if (Object.keys(config).length > 0) expect((await alice.api.post(`/v1/apps/${id}/config/`, { values: config })).status).toBe(201);
    const own = await WorkingCopy.init(join(root, id), join(root, 'home'), key);
    await own.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${server.gitPort as number}/${id}.git`]);
    await own.commit(files, 'first version');
    const outcome = await own.git(['push', 'svc', 'main']);
    return { code: outcome.code ?? -1, output: `${outcome.stdout}${outcome.stderr}` };
  };
  /**
   * On an engine with the default stack (node and busybox, no other language), whether the push
   * was refused saying the stack lacks `program`; false where the stack has the languages.
   */
  const refusedForLackOf = (program: string, language: string, pushed: { code: number; output: string }): boolean => {
    if (name !== 'docker' || TEST_STACK_IMAGE !== null) return false;
    if (process.env.CI === 'true') throw new Error('TEST_STACK_IMAGE is not set: .ci/test-images.sh makes the Debian stack (scripts/make-stack-image.sh --debian)');
    expect(pushed.output).toContain(`${program} is not on PATH: this stack has no ${language}.`);
    expect(pushed.code).not.toBe(0);
    return true;
  };
  const served = async (id: string): Promise<string> => {
    const answer = await viaRouter(server.routerPort ?? 0, id);
    return answer.status === 200 ? answer.text : `${answer.status} ${answer.text}`;
  };

  beforeAll(async () => {
    if (unavailable !== null) throw new Error(`the ${name} scheduler cannot run here under CI=true: ${unavailable}`);
    root = await mkdtemp(join(tmpdir(), `svc-bp-e2e-${name}-`));
    await mkdir(join(root, 'repos'));
    git = await serveGitOverHttp(join(root, 'repos'));
    mirror = await startNpmMirror(mirrorAddress, 'svc-mirror-only', 'from the mirror');
    unallowed = await startNpmMirror(mirrorAddress, 'svc-mirror-only', 'from another mirror');
    pythonIndex = await startPythonIndex(mirrorAddress, 'svc-greeting', 'hello from the index');
    server = await startServer(
      loadConfig({
        ...env(),
        DATA_DIR: join(root, 'data'),
        GIT_SSH_PORT: '0',
        ROUTER_PORT: '0',
        ROUTER_WORKERS: '0',
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'silent',
        HEALTHCHECK_TIMEOUT: '60',
        BUILDPACK_URL_ALLOW: git.url,
        RELEASE_PHASE_TIMEOUT_SECONDS: '20',
        // Above what the apps here make (on Docker the stack image counts too), below what a hostile build asks for.
        BUILD_IMAGE_LIMIT_MB: '400',
        BUILD_CACHE_LIMIT_MB: '64',
        BUILD_NETWORK_ALLOW: `${mirrorAddress}:${mirror.port}, ${mirrorAddress}:${pythonIndex.port}`,
      }),
      pino({ level: 'silent' }),
    );
    alice = await signUp(new ApiClient(server.url), `alice${name}`);
    key = await keyPair(root, 'alice');
    expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: key.publicKey })).status).toBe(201);
    for (const id of [app, other]) expect((await alice.api.post('/v1/apps/', { id })).status).toBe(201);
    copy = await WorkingCopy.init(join(root, 'app'), join(root, 'home'), key);
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${server.gitPort as number}/${app}.git`]);
  });

  afterAll(async () => {
    for (const id of [app, other]) await alice?.api.delete(`/v1/apps/${id}/`).catch(() => undefined);
    await server?.close();
    await git?.close();
    await mirror?.close();
    await unallowed?.close();
    await pythonIndex?.close();
    if (name === 'docker' && TEST_DOCKER_HOST !== null) {
      const docker: Docker = createEngine(TEST_DOCKER_HOST);
      const values = env();
      await removeEngineInstance(docker, {
        instance: values.DOCKER_INSTANCE as string,
        network: values.DOCKER_NETWORK as string,
        bridge: values.DOCKER_BRIDGE as string,
        build: { network: build.BUILDPACK_NETWORK, bridge: build.BUILDPACK_BRIDGE },
      });
    }
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('builds a Node.js app with an npm dependency and a lockfile, no Procfile, and the router serves it', async () => {
    await copy.commit(await nodeAppWithDependency(copy.dir, 'hello v1'), 'first version');
    const first = await push();
    expect(first.output).toContain('Node.js app detected');
    expect(first.output).toContain('Running npm ci (package-lock.json)');
    expect(first.code).toBe(0);
    expect(await served(app)).toBe('hello v1 172800000\n');
    const structure = (await alice.api.get<{ structure: Record<string, number> }>(`/v1/apps/${app}/`)).body.structure;
    expect(structure).toEqual({ web: 1 });
  });

  it('pushes again with one file changed: the installed modules come from the build cache', async () => {
    await copy.commit({ 'server.js': serverJs('hello v2') }, 'second version');
    const second = await push();
    expect(second.code).toBe(0);
    expect(second.output).toContain('Restoring node_modules from the build cache');
    expect(second.output).not.toContain('Running npm ci');
    expect(await served(app)).toBe('hello v2 172800000\n');
  });

  it('runs a release phase before the new version starts; one that fails refuses the push and the old version keeps serving', async () => {
    await copy.commit({ Procfile: 'web: npm start\nrelease: echo migrating the database && echo "release saw $GREETING"\n', 'server.js': serverJs('hello v3') }, 'release phase');
    expect((await alice.api.post(`/v1/apps/${app}/config/`, { values: { GREETING: 'hi' } })).status).toBe(201);
    const good = await push();
    expect(good.code).toBe(0);
    expect(good.output).toContain('migrating the database');
    expect(good.output).toContain('release saw hi');
    expect(await served(app)).toBe('hello v3 172800000\n');
    expect(await logContaining(app, 'migrating the database')).toContain('migrating the database');
    // release is never a process type with containers.
    expect((await alice.api.get<{ structure: Record<string, number> }>(`/v1/apps/${app}/`)).body.structure).toEqual({ web: 1 });

    const before = await releases(app);
    await copy.commit({ Procfile: 'web: npm start\nrelease: echo the migration broke >&2; exit 1\n', 'server.js': serverJs('hello v4') }, 'failing release phase');
    const bad = await push();
    expect(bad.code).not.toBe(0);
    expect(bad.output).toContain('the migration broke');
    expect(bad.output).toMatch(/exit(ed)? (with )?(code |status )?1/i);
    expect(await releases(app)).toBe(before);
    expect(await served(app)).toBe('hello v3 172800000\n');
    await copy.expectGit(['reset', '-q', '--hard', 'HEAD~1']);
  });

  it('uses the buildpack BUILDPACK_URL names at an allowed git URL, and refuses any other URL', async () => {
    await buildpackRepository(join(root, 'repos'), 'custom', 'echo "custom buildpack compiling"');
    const refused = await alice.api.post(`/v1/apps/${other}/config/`, { values: { BUILDPACK_URL: 'https://example.com/evil.git' } });
    expect(refused.status).toBe(201);
    const otherCopy = await WorkingCopy.init(join(root, 'other'), join(root, 'home'), key);
    await otherCopy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${server.gitPort as number}/${other}.git`]);
    await otherCopy.commit({ 'README.md': 'nothing to install\n' }, 'first');
    const denied = await otherCopy.git(['push', 'svc', 'main']);
    expect(denied.code).not.toBe(0);
    expect(`${denied.stdout}${denied.stderr}`).toContain('BUILDPACK_URL_ALLOW');
    expect(await releases(other)).toBe(2);

    expect((await alice.api.post(`/v1/apps/${other}/config/`, { values: { BUILDPACK_URL: `${git.url}custom.git#main` } })).status).toBe(201);
    const allowed = await otherCopy.git(['push', 'svc', 'main']);
    expect(`${allowed.stdout}${allowed.stderr}`).toContain('custom buildpack compiling');
    expect(allowed.code).toBe(0);
    // The web process prints the buildpack's marker as it starts; an engine's log may take a moment to follow.
    expect(await logContaining(other, 'compiled by custom')).toContain('compiled by custom');
  });

  it('gives a hostile compile step the npm registry and nothing of this host or another app', async () => {
    const api = Number(new URL(server.url).port);
    const targets = [`127.0.0.1:5432`, `127.0.0.1:${api}`, `127.0.0.1:${server.gitPort as number}`, ...hostAddresses().flatMap((a) => [`${a}:5432`, `${a}:${api}`]), 'HOST:5432', `HOST:${api}`];
    // The first app serves on its port range (process) or its container address (docker).
    if (name === 'process') for (let port = 41000; port < 41050; port++) targets.push(`127.0.0.1:${port}`);
    else {
      const docker = createEngine(TEST_DOCKER_HOST as string);
      const [web] = await docker.listContainers({ filters: { label: [`${LABELS.app}=${app}`] } });
      const networks = web ? Object.values((await docker.getContainer(web.Id).inspect()).NetworkSettings.Networks) : [];
      for (const network of networks) targets.push(`${network.IPAddress}:5000`, `${network.IPAddress}:8080`);
      expect(networks.length).toBeGreaterThan(0);
    }
    await buildpackRepository(join(root, 'repos'), 'hostile', PROBE(targets));
    expect((await alice.api.post(`/v1/apps/${other}/config/`, { values: { BUILDPACK_URL: `${git.url}hostile.git` } })).status).toBe(201);
    const otherCopy = new WorkingCopy(join(root, 'other'), join(root, 'home'), key);
    await otherCopy.commit({ 'README.md': 'probe\n' }, 'probe');
    const outcome = await otherCopy.git(['push', 'svc', 'main']);
    const output = `${outcome.stdout}${outcome.stderr}`;
    expect(output).toContain('probe registry 200');
    const probes = output.split('\n').filter((line) => /probe \S+:\d+ /.test(line));
    expect(probes.length).toBeGreaterThanOrEqual(targets.filter((t) => !t.startsWith('HOST:')).length);
    expect(probes.filter((line) => line.includes('REACHED'))).toEqual([]);
    expect(outcome.code).toBe(0);
  });

  it('builds a static site (public/index.html, no Procfile): the stack\'s server serves its files and no dot-name', async () => {
    const site = `bps${name.slice(0, 3)}-${tag}`;
    try {
      const pushed = await pushToNewApp(site, { 'public/index.html': '<h1>a static site</h1>\n', 'public/docs/index.html': '<h1>its docs</h1>\n', 'public/.env': 'SECRET=1\n', 'README.md': 'the site is public/\n' });
      expect(pushed.output).toContain('Static site detected: serving public/');
      expect(pushed.code).toBe(0);
      expect(await served(site)).toBe('<h1>a static site</h1>\n');
      expect((await viaRouter(server.routerPort ?? 0, site, '/docs/')).text).toBe('<h1>its docs</h1>\n');
      expect((await viaRouter(server.routerPort ?? 0, site, '/.env')).status).toBe(404);
      expect((await viaRouter(server.routerPort ?? 0, site, '/%2e%2e/README.md')).status).toBe(404);
      expect((await alice.api.get<{ structure: Record<string, number> }>(`/v1/apps/${site}/`)).body.structure).toEqual({ web: 1 });
    } finally {
      await alice.api.delete(`/v1/apps/${site}/`).catch(() => undefined);
    }
  });

  it("builds a Python app (requirements.txt from the operator's index, .python-version, a Procfile) into a virtualenv its web process runs from", async () => {
    const python = `bpy${name.slice(0, 3)}-${tag}`;
    const files = pythonApp();
    try {
      // pip reads plain http only from a host named trusted.
      const pushed = await pushToNewApp(python, files, { PIP_INDEX_URL: pythonIndex.url, PIP_TRUSTED_HOST: mirrorAddress });
      expect(pushed.output).toContain('Python app detected');
      if (refusedForLackOf('python3', 'Python', pushed)) return;
      expect(pushed.output).toContain('Successfully installed svc-greeting-1.0.0');
      expect(pushed.code).toBe(0);
      expect(await served(python)).toBe('hello from the index from .venv\n');
      expect(pythonIndex.requests).toContain('/simple/svc-greeting/');
    } finally {
      await alice.api.delete(`/v1/apps/${python}/`).catch(() => undefined);
    }
  });

  it('builds a Go module with a vendored dependency (nothing fetched: GOPROXY=off) into its one program, the web process', async () => {
    const go = `bpg${name.slice(0, 3)}-${tag}`;
    const files = goApp();
    try {
      const pushed = await pushToNewApp(go, files, { GOPROXY: 'off' });
      expect(pushed.output).toContain('Go app detected');
      if (refusedForLackOf('go', 'Go', pushed)) return;
      expect(pushed.output).toContain('Using vendor/ (nothing is fetched)');
      expect(pushed.code).toBe(0);
      expect(await served(go)).toBe('hello from a vendored Go module\n');
    } finally {
      await alice.api.delete(`/v1/apps/${go}/`).catch(() => undefined);
    }
  });

  it('builds a Ruby app with its gems in vendor/cache (nothing fetched) and serves it through bundle exec', async () => {
    const ruby = `bpr${name.slice(0, 3)}-${tag}`;
    try {
      const pushed = await pushToNewApp(ruby, await rubyApp());
      expect(pushed.output).toContain('Ruby app detected');
      if (refusedForLackOf('ruby', 'Ruby', pushed)) return;
      expect(pushed.output).toContain('Installing from vendor/cache (nothing is fetched)');
      expect(pushed.code).toBe(0);
      expect(await served(ruby)).toBe('hello from a vendored gem in production\n');
    } finally {
      await alice.api.delete(`/v1/apps/${ruby}/`).catch(() => undefined);
    }
  });

  it('runs every buildpack a .buildpacks file lists, in order, each on what the one before left; the last one names the web process', async () => {
    const multi = `bpm${name.slice(0, 3)}-${tag}`;
    await buildpackRepository(join(root, 'repos'), 'multi-a', 'echo "assets from a" > "$1/from-a.txt" && echo "a compiled"');
    await buildpackRepository(join(root, 'repos'), 'multi-b', 'echo "b saw: $(cat "$1/from-a.txt")"');
    try {
      const pushed = await pushToNewApp(multi, { '.buildpacks': `# assets, then the server\n${git.url}multi-a.git\n${git.url}multi-b.git\n`, 'README.md': 'two buildpacks\n' });
      expect(pushed.output).toContain('Detected Custom (.buildpacks, 1 of 2)');
      expect(pushed.output).toContain('Detected Custom (.buildpacks, 2 of 2)');
      expect(pushed.output.indexOf('a compiled')).toBeLessThan(pushed.output.indexOf('b saw: assets from a'));
      expect(pushed.code).toBe(0);
      expect(await served(multi)).toBe('ok');
      expect(await logContaining(multi, 'compiled by multi-b')).toContain('compiled by multi-b');
    } finally {
      await alice.api.delete(`/v1/apps/${multi}/`).catch(() => undefined);
    }
  });

  it("installs a dependency from the operator's mirror (BUILD_NETWORK_ALLOW, the app's NPM_CONFIG_REGISTRY); a mirror the operator did not allow stays out of reach", async () => {
    const [allowedApp, probingApp] = [`bpn${name.slice(0, 3)}-${tag}`, `bpq${name.slice(0, 3)}-${tag}`];
    const dir = join(root, allowedApp);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'mirrored', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { 'svc-mirror-only': '1.0.0' } }));
    await exec('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', '--ignore-scripts', '--registry', mirror.url], dir);
    const server = "require('http').createServer((q, s) => s.end(require('svc-mirror-only') + '\\n')).listen(Number(process.env.PORT));\n";
    const files = { 'server.js': server, 'package.json': await readFile(join(dir, 'package.json'), 'utf8'), 'package-lock.json': await readFile(join(dir, 'package-lock.json'), 'utf8') };
    const targets = [`${mirrorAddress}:${mirror.port}`, `${mirrorAddress}:${unallowed.port}`];
    await buildpackRepository(join(root, 'repos'), 'mirror-probe', PROBE(targets));
    try {
      const asked = mirror.requests.length;
      const pushed = await pushToNewApp(allowedApp, files, { NPM_CONFIG_REGISTRY: mirror.url });
      expect(pushed.code).toBe(0);
      expect(await served(allowedApp)).toBe('from the mirror\n');
      expect(mirror.requests.slice(asked)).toContain('/svc-mirror-only/-/svc-mirror-only-1.0.0.tgz');

      // The mirror's machine on another port (a mirror the operator did not name), tried from a compile step.
      const probed = await pushToNewApp(probingApp, { 'README.md': 'probes\n' }, { BUILDPACK_URL: `${git.url}mirror-probe.git` });
      expect(probed.output).toContain(`probe ${targets[0]} REACHED`);
      expect(probed.output).toMatch(new RegExp(`probe ${targets[1]?.replace(/\./g, '\\.')} blocked`));
      expect(unallowed.requests).toEqual([]);
    } finally {
      for (const id of [allowedApp, probingApp]) await alice.api.delete(`/v1/apps/${id}/`).catch(() => undefined);
    }
  });

  it('refuses a push whose compile writes past BUILD_IMAGE_LIMIT_MB or BUILD_CACHE_LIMIT_MB, the figures in its output, the app keeping its release', async () => {
    const otherCopy = new WorkingCopy(join(root, 'other'), join(root, 'home'), key);
    const before = await releases(other);
    for (const [where, figure] of [
      ['$1', /the build made \d+(\.\d+)? MiB, over BUILD_IMAGE_LIMIT_MB=400: nothing of it is kept/],
      ['$2', /the build cache took \d+(\.\d+)? MiB, over BUILD_CACHE_LIMIT_MB=64 \(writes past it fail\)/],
    ] as const) {
      const repository = `filler${where === '$1' ? 'app' : 'cache'}`;
      // 1 GiB asked for: the file system of the limit stops it.
      await buildpackRepository(join(root, 'repos'), repository, `head -c 1073741824 /dev/zero > "${where}/big" || echo "wrote $(wc -c < "${where}/big")"`);
      expect((await alice.api.post(`/v1/apps/${other}/config/`, { values: { BUILDPACK_URL: `${git.url}${repository}.git` } })).status).toBe(201);
      await otherCopy.commit({ 'README.md': `fill ${where}\n` }, `fill ${where}`);
      const outcome = await otherCopy.git(['push', 'svc', 'main']);
      const output = `${outcome.stdout}${outcome.stderr}`;
      expect(outcome.code).not.toBe(0);
      expect(output).toMatch(figure);
      const wrote = Number(/wrote (\d+)/.exec(output)?.[1] ?? NaN);
      expect(wrote).toBeLessThan(where === '$1' ? 440 * 1024 * 1024 : 80 * 1024 * 1024);
    }
    // The config changes made releases of their own; no build made one.
    expect(await releases(other)).toBe(before + 2);
  });
});
