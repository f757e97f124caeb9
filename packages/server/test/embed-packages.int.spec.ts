import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { accessSync, constants, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

// What an embedder does (docs/embedding.md, "Depend on it from your project"): the tarballs of
// `npm run pack` installed with npm into a new project outside the checkout, then @svc/core's
// README followed in plain ESM and in TypeScript (module nodenext). One install for the file.
// better-sqlite3 would compile from source (about 80 s of a core) where its prebuilt binary cannot
// be downloaded: the test serves it on loopback as a company's mirror of prebuilt binaries does.
jest.setTimeout(900_000);

const ROOT = join(__dirname, '..', '..', '..');
// Any request for an @svc package goes here and fails at once: nothing of ours can come from a
// registry. Third-party packages come from the npm registry (or npm's cache) as usual.
const DEAD_REGISTRY = 'http://127.0.0.1:9/';
const WORKSPACES: string[] = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
const manifestOf = (dir: string): { name: string; version: string; main?: string } => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const PACKAGES = WORKSPACES.map((workspace) => manifestOf(join(ROOT, workspace)));
const versionOf = (name: string): string => manifestOf(join(ROOT, 'node_modules', name)).version;

// The children get neither the npm_* variables of an `npm test` around this run nor a terminal.
const childEnv = (): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));

function run(command: string, args: string[], cwd: string, timeoutMs = 600_000, env: NodeJS.ProcessEnv = childEnv()): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
}

function mustRun(what: string, command: string, args: string[], cwd: string, timeoutMs?: number, env?: NodeJS.ProcessEnv): SpawnSyncReturns<string> {
  const outcome = run(command, args, cwd, timeoutMs, env);
  if (outcome.status !== 0) {
    const tail = `${outcome.stdout}\n${outcome.stderr}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`${what} failed (status ${outcome.status}, ${outcome.error?.message ?? 'no spawn error'}):\n${tail}`);
  }
  return outcome;
}

/**
 * better-sqlite3's binary as a prebuilt download for this Node.js, served on loopback where
 * prebuild-install (better-sqlite3's install script) looks when `npm_config_better_sqlite3_binary_host`
 * names a mirror (scripts/prebuild-mirror.mjs): the very binary this checkout's `npm ci` made. The
 * mirror runs in a child process: the installs run with spawnSync, which blocks this one.
 */
async function prebuildMirror(dir: string): Promise<{ host: string; file: string; requested: () => string; stop: () => void }> {
  const script = join(ROOT, 'scripts', 'prebuild-mirror.mjs');
  const file = mustRun('prebuild-mirror pack', process.execPath, [script, 'pack', dir], ROOT).stdout.trim();
  const server = spawn(process.execPath, [script, 'serve', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const host = await new Promise<string>((found, failed) => {
    server.stdout.setEncoding('utf8').once('data', (line: string) => found(line.trim()));
    server.once('exit', (code) => failed(new Error(`the prebuild mirror exited (${code})`)));
  });
  return { host, file, requested: () => (existsSync(join(dir, 'requests.log')) ? readFileSync(join(dir, 'requests.log'), 'utf8') : ''), stop: () => server.kill() };
}

/** The README's example: its first `js` block under "## Use" and the output block after it. */
function readmeExample(readme: string): { code: string; output: string } {
  const use = readme.slice(readme.indexOf('\n## Use\n'));
  const blocks = [...use.matchAll(/\n```(\w*)\n([\s\S]*?)\n```\n/g)];
  const code = blocks.find((block) => block[1] === 'js');
  const output = blocks[blocks.indexOf(code!) + 1];
  if (!code || !output || output[1] !== '') throw new Error("@svc/core's README has no `js` example followed by its output under ## Use");
  return { code: `${code[2]}\n`, output: `${output[2]}\n` };
}

const TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    strict: true,
    // The installed declarations are checked too, not only the embedding's own file.
    skipLibCheck: false,
    types: ['node'],
    rootDir: '.',
    outDir: 'dist',
    noEmitOnError: true,
  },
};

// Calls the declarations must refuse: were the types missing (any), each would pass.
const WRONG_TS = `import { createUseCases } from '@svc/core';
import { createDatabase } from '@svc/persistence-typeorm';
import { notExported } from '@svc/core';
import { DomainError } from '@svc/core/dist/errors.js';
const database = await createDatabase({ dataDir: 42 });
createUseCases({ uow: database.uow });
export { notExported, DomainError };
`;

// Loads every package's entry point the two ways, and an internal module, in a child process.
const LOAD_CHECK = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const answer = {};
for (const name of JSON.parse(process.argv[2])) {
  const commonjs = Object.keys(require(name));
  const esm = Object.keys(await import(name));
  answer[name] = { commonjs: commonjs.length, missingInEsm: commonjs.filter((key) => !esm.includes(key)) };
}
const refusal = (load) => { try { load(); return 'loaded'; } catch (error) { return error.code; } };
answer.internalRequire = refusal(() => require('@svc/core/dist/errors.js'));
answer.internalImport = await import('@svc/core/dist/errors.js').then(() => 'loaded', (error) => error.code);
const { BUILTIN_BUILDPACKS_DIR } = require('@svc/buildpacks-git');
const { STACK_IMAGE_SCRIPT } = require('@svc/scheduler-docker');
answer.files = { buildpacks: BUILTIN_BUILDPACKS_DIR, stackScript: STACK_IMAGE_SCRIPT, dashboard: require.resolve('@svc/dashboard/package.json') };
console.log(JSON.stringify(answer));
`;

describe('the @svc packages installed from their tarballs in a project outside the checkout (docs/embedding.md)', () => {
  let work: string;
  let project: string;
  let tarballs: string;
  let installLog: string;
  let prebuildRequests: string;
  let prebuildFile: string;
  let example: { code: string; output: string };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'svc-embed-packages-'));
    if (!relative(ROOT, work).startsWith('..')) throw new Error(`${work} is inside the checkout ${ROOT}`);
    tarballs = join(work, 'tarballs');
    project = join(work, 'project');
    mkdirSync(project);
    // The tarballs as `npm run pack` makes them (it builds first), into a folder of the test's.
    mustRun('npm run pack', process.execPath, [join(ROOT, 'scripts', 'pack.mjs'), '--out', tarballs], ROOT);
    mustRun('npm init', 'npm', ['init', '-y'], project);
    const files = readdirSync(tarballs).filter((name) => name.endsWith('.tgz')).map((name) => join(tarballs, name));
    const mirror = await prebuildMirror(join(work, 'prebuilds'));
    // npm asks for the metadata of some @svc dependencies before it has placed the tarball that
    // answers them; those requests meet the dead registry and are not retried.
    try {
      installLog = mustRun(
        'npm install of the tarballs',
        'npm',
        ['install', '--no-audit', '--no-fund', '--prefer-offline', '--fetch-retries=0', '--loglevel=http', `--@svc:registry=${DEAD_REGISTRY}`, ...files, `typescript@${versionOf('typescript')}`, `@types/node@${versionOf('@types/node')}`],
        project,
        600_000,
        { ...childEnv(), npm_config_better_sqlite3_binary_host: mirror.host },
      ).stderr;
      prebuildRequests = mirror.requested();
      prebuildFile = mirror.file;
    } finally {
      mirror.stop();
    }
    example = readmeExample(readFileSync(join(project, 'node_modules', '@svc', 'core', 'README.md'), 'utf8'));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('installs every package from its tarball: copies in node_modules, nothing linked, nothing of ours from a registry', () => {
    const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; resolved?: string; link?: boolean }> };
    for (const { name, version } of PACKAGES) {
      const installed = join(project, 'node_modules', name);
      expect({ name, link: lstatSync(installed).isSymbolicLink() }).toEqual({ name, link: false });
      expect(relative(ROOT, realpathSync(installed)).startsWith('..')).toBe(true);
      const locked = lock.packages[`node_modules/${name}`];
      expect({ name, version: locked?.version, resolved: locked?.resolved, link: locked?.link }).toEqual({
        name,
        version,
        resolved: `file:../tarballs/${name.slice(1).replace('/', '-')}-${version}.tgz`,
        link: undefined,
      });
    }
    const ours = Object.keys(lock.packages).filter((path) => /(^|\/)node_modules\/@svc\//.test(path));
    expect(ours.sort()).toEqual(PACKAGES.map(({ name }) => `node_modules/${name}`).sort());
    expect(installLog).not.toMatch(/GET 200 \S*@svc/);
    // better-sqlite3's install took its binary from the mirror rather than compiling it.
    expect(prebuildRequests.split('\n')).toContain(`/v${versionOf('better-sqlite3')}/${prebuildFile}`);
  });

  it("runs @svc/core's README in plain ESM: a user, an app and its releases on the embedded SQLite database", () => {
    writeFileSync(join(project, 'embed.mjs'), example.code);
    const dataDir = join(work, 'esm-data');
    const outcome = run(process.execPath, ['embed.mjs', dataDir], project, 120_000);
    expect({ status: outcome.status, stderr: outcome.stderr, stdout: outcome.stdout }).toEqual({ status: 0, stderr: '', stdout: example.output });
    expect(example.output).toMatch(/^alice myapp 2 3\n/);
    expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['controller.sqlite', 'logs']));
  });

  it('type-checks the same code in TypeScript (module nodenext) against the installed declarations, refuses wrong calls, and runs it compiled', () => {
    writeFileSync(join(project, 'embed.mts'), example.code);
    writeFileSync(join(project, 'wrong.mts'), WRONG_TS);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, include: ['embed.mts'] }, null, 2));
    writeFileSync(join(project, 'tsconfig.wrong.json'), JSON.stringify({ extends: './tsconfig.json', include: ['wrong.mts'] }, null, 2));
    // The project's own TypeScript, installed beside the packages.
    const tsc = join(project, 'node_modules', 'typescript', 'bin', 'tsc');

    // One compilation both checks (no error, nothing printed) and writes dist/ for the run below.
    const checked = run(process.execPath, [tsc, '-p', '.'], project, 300_000);
    expect({ status: checked.status, output: checked.stdout }).toEqual({ status: 0, output: '' });

    const refused = run(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.wrong.json'], project, 300_000);
    expect(refused.status).not.toBe(0);
    expect(refused.stdout).toMatch(/wrong\.mts\(3,\d+\): error TS2305: Module '"@svc\/core"' has no exported member 'notExported'/);
    expect(refused.stdout).toMatch(/wrong\.mts\(4,\d+\): error TS2307: Cannot find module '@svc\/core\/dist\/errors\.js'/);
    expect(refused.stdout).toMatch(/wrong\.mts\(5,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
    expect(refused.stdout).toMatch(/wrong\.mts\(6,\d+\): error TS2345: .*'CoreDependencies'/);

    const outcome = run(process.execPath, [join('dist', 'embed.mjs'), join(work, 'ts-data')], project, 120_000);
    expect({ status: outcome.status, stderr: outcome.stderr, stdout: outcome.stdout }).toEqual({ status: 0, stderr: '', stdout: example.output });
  });

  it('loads every entry point with require and import alike, refuses internal modules, and finds the files the packages read in the packages themselves', () => {
    const modules = [...PACKAGES.filter(({ main }) => main !== undefined).map(({ name }) => name), '@svc/core/testing'];
    writeFileSync(join(project, 'load-check.mjs'), LOAD_CHECK);
    const answer = JSON.parse(mustRun('load-check.mjs', process.execPath, ['load-check.mjs', JSON.stringify(modules)], project, 120_000).stdout) as Record<string, unknown> & {
      files: { buildpacks: string; stackScript: string; dashboard: string };
    };
    for (const name of modules) {
      // Every name `require` gives is a named export for `import` too (Node reads them from the CommonJS output).
      expect({ name, missingInEsm: (answer[name] as { missingInEsm: string[] }).missingInEsm }).toEqual({ name, missingInEsm: [] });
      expect((answer[name] as { commonjs: number }).commonjs).toBeGreaterThan(0);
    }
    expect({ require: answer.internalRequire, import: answer.internalImport }).toEqual({ require: 'ERR_PACKAGE_PATH_NOT_EXPORTED', import: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });

    const installed = join(project, 'node_modules', '@svc');
    expect(answer.files.buildpacks).toBe(join(installed, 'buildpacks-git', 'buildpacks'));
    for (const pack of ['node', 'python', 'go', 'ruby', 'static', 'plain']) for (const step of ['detect', 'compile', 'release']) accessSync(join(answer.files.buildpacks, pack, 'bin', step), constants.X_OK);
    expect(answer.files.stackScript).toBe(join(installed, 'scheduler-docker', 'scripts', 'make-stack-image.sh'));
    accessSync(answer.files.stackScript, constants.X_OK);
    expect(readdirSync(join(installed, 'dashboard', 'public'))).toEqual(expect.arrayContaining(['index.html', 'js']));
  });

  it('runs the installed svc command and the installed controller, which serves its API and dashboard', async () => {
    const svc = run(join(project, 'node_modules', '.bin', 'svc'), ['--version'], project);
    expect({ status: svc.status, stdout: svc.stdout }).toEqual({ status: 0, stdout: `${manifestOf(join(ROOT, 'packages', 'cli')).version}\n` });

    const dataDir = join(work, 'server-data');
    mkdirSync(dataDir);
    const env = { ...childEnv(), PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, SCHEDULER: 'memory', ROUTER_PORT: 'off', GIT_SSH_PORT: 'off', NODE_ENV: 'development' };
    const server = spawn(process.execPath, [join(project, 'node_modules', '@svc', 'server', 'dist', 'main.js')], { cwd: project, env, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const api = await new Promise<string>((found, failed) => {
        let said = '';
        server.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          said += chunk;
          const ready = /API (http:\/\/\S+\/)/.exec(said);
          if (ready) found(ready[1] as string);
        });
        server.on('exit', (code) => failed(new Error(`the installed controller exited (${code}) before it served:\n${said}`)));
        setTimeout(() => failed(new Error(`the installed controller did not serve within 60 s:\n${said}`)), 60_000).unref();
      });
      const ready = await fetch(`${api}readyz`);
      expect({ status: ready.status, version: ready.headers.get('svc_platform_version') }).toEqual({ status: 200, version: manifestOf(join(ROOT, 'packages', 'server')).version });
      const page = await fetch(`${api}dashboard/`);
      expect({ status: page.status, type: page.headers.get('content-type') }).toEqual({ status: 200, type: expect.stringMatching(/^text\/html/) });
      expect(await page.text()).toMatch(/<script[^>]+js\/main\.js/);
    } finally {
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((done) => server.once('exit', done));
        server.kill('SIGTERM');
        await exited;
      }
    }
  });
});
