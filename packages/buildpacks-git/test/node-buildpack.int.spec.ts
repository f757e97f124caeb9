import { execFileSync } from 'node:child_process';
import { cp, lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { list, npmCalls, packLocalPackage, removeTools, runStep, shellsToTest, writeApp, writeEnvDir, type Shell } from './support/buildpack-run';

/*
 * The built-in Node.js buildpack (buildpacks/node), its real scripts run on apps made in
 * temporary directories, under the host's sh and under busybox sh with only busybox's
 * applets, node and npm. Dependencies are local tarballs (`file:`), so no network is needed,
 * except for the one test that installs from the npm registry.
 */

const INSTALLS = /^(ci|install|i|add)\b/;
// Each compile runs npm; the machine is shared.
const STEP_TIMEOUT_MS = 120_000;

/** The packages installed in an app's node_modules (npm's own dot files left out). */
async function packages(app: string): Promise<string[]> {
  return (await list(join(app, 'node_modules'))).filter((name) => !name.startsWith('.'));
}

/** Whether the npm registry answers, asked once (fails the registry test under CI=true when it does not). */
function registryReachable(): boolean {
  try {
    execFileSync(process.execPath, ['-e', "fetch('https://registry.npmjs.org/ms/2.1.3').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"], {
      timeout: 20_000,
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

describe.each(shellsToTest())('the Node.js buildpack under %s', (shell: Shell) => {
  let root: string;
  let vendor: string;
  let calls: string;

  beforeAll(async () => {
    vendor = await mkdtemp(join(tmpdir(), 'svc-bp-vendor-'));
    await packLocalPackage(vendor, 'greet', "module.exports = (name) => 'hello ' + name;\n");
    await packLocalPackage(vendor, 'shout', 'module.exports = (text) => text.toUpperCase();\n');
    await packLocalPackage(vendor, 'extra', 'module.exports = 42;\n');
    // Three `npm pack` runs: seconds each on a loaded machine, past jest's default 5 s.
  }, STEP_TIMEOUT_MS);

  afterAll(async () => {
    await rm(vendor, { recursive: true, force: true });
    await removeTools();
  });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-node-'));
    calls = join(root, 'npm-calls');
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  /** An app depending on the local tarballs: greet, and shout as a devDependency used by its build. */
  async function app(directory: string, pkg: Record<string, unknown> = {}, lock = true, files: Record<string, string> = {}): Promise<string> {
    await cp(join(vendor, 'greet-1.0.0.tgz'), join(directory, 'vendor', 'greet-1.0.0.tgz'));
    await cp(join(vendor, 'shout-1.0.0.tgz'), join(directory, 'vendor', 'shout-1.0.0.tgz'));
    await cp(join(vendor, 'extra-1.0.0.tgz'), join(directory, 'vendor', 'extra-1.0.0.tgz'));
    await writeApp(directory, { dependencies: { greet: 'file:vendor/greet-1.0.0.tgz' }, ...pkg }, files, lock);
    return directory;
  }

  const BUILD_SCRIPT = [
    "const fs = require('fs');",
    "const shout = require('shout');",
    "const greet = require('greet');",
    "fs.mkdirSync('dist', { recursive: true });",
    "fs.writeFileSync('dist/out.txt', shout(greet('world')) + '|' + (process.env.GREETING || '-') + '|' + (process.env.SECRET_TOKEN ? 'secret set' : 'no secret'));",
    "fs.appendFileSync('builds.log', 'built\\n');",
  ].join('\n');

  async function buildApp(directory: string): Promise<string> {
    return app(
      directory,
      { devDependencies: { shout: 'file:vendor/shout-1.0.0.tgz' }, scripts: { build: 'node build.js', start: 'node -e 0' } },
      true,
      { 'build.js': BUILD_SCRIPT },
    );
  }

  function compile(build: string, extraEnv: Record<string, string> = {}): ReturnType<typeof runStep> {
    return runStep(shell, 'node', 'compile', [build, join(root, 'cache'), join(root, 'env')], calls, extraEnv);
  }

  it('detects an app with a package.json, and no other', async () => {
    const nodeApp = await writeApp(join(root, 'a'), {}).then(() => join(root, 'a'));
    await writeFile(join(root, 'Procfile'), 'web: ./run\n');

    expect(await runStep(shell, 'node', 'detect', [nodeApp], calls)).toEqual({ code: 0, output: 'Node.js\n' });
    expect((await runStep(shell, 'node', 'detect', [root], calls)).code).toBe(1);
  });

  it('installs with npm ci from the lockfile, the dependency a real directory that node can load', async () => {
    const build = await app(join(root, 'app'), { engines: { node: '>=18' } });

    const result = await compile(build);

    expect(result.output).toContain('-----> Installing dependencies');
    expect(result.output).toContain('       Running npm ci (package-lock.json)');
    expect(result.output).toContain(`engines.node >=18: the stack's Node.js ${process.version} satisfies it`);
    expect(result.code).toBe(0);
    expect((await npmCalls(calls)).filter((call) => INSTALLS.test(call)).map((call) => call.split(' ')[0])).toEqual(['ci']);
    expect((await lstat(join(build, 'node_modules', 'greet'))).isDirectory()).toBe(true);
    expect(execFileSync(process.execPath, ['-e', "process.stdout.write(require('greet')('you'))"], { cwd: build, encoding: 'utf8' })).toBe('hello you');
    // npm's cache and the saved modules are in CACHE_DIR; nothing was written where HOME would be.
    expect(await list(join(root, 'cache'))).toEqual(['home', 'node', 'npm']);
    expect(await list(join(root, 'cache', 'node'))).toEqual(['inputs', 'node_modules']);
  }, STEP_TIMEOUT_MS);

  it('runs no npm at all for an app with nothing to install, build or check', async () => {
    const build = join(root, 'bare');
    await writeApp(build, { scripts: { start: 'node server.js' } }, { 'server.js': 'console.log(1);\n' }, false);

    const result = await compile(build);

    expect(result.code).toBe(0);
    expect(result.output).toContain('nothing to install');
    expect(await npmCalls(calls)).toEqual([]);
    expect(await list(build)).not.toContain('node_modules');
  }, STEP_TIMEOUT_MS);

  it('installs with npm install when there is no lockfile', async () => {
    const build = await app(join(root, 'app'), {}, false);

    const result = await compile(build);

    expect(result.code).toBe(0);
    expect(result.output).toContain('No package-lock.json: running npm install');
    expect((await npmCalls(calls)).filter((call) => INSTALLS.test(call)).map((call) => call.split(' ')[0])).toEqual(['install']);
    expect(await list(join(build, 'node_modules'))).toContain('greet');
  }, STEP_TIMEOUT_MS);

  it('runs the build script with the devDependencies, then prunes them', async () => {
    const build = await buildApp(join(root, 'app'));

    const result = await compile(build);

    expect(result.code).toBe(0);
    expect(result.output).toContain('-----> Building (npm run build)');
    expect(result.output).toContain('-----> Pruning devDependencies');
    expect(await readFile(join(build, 'dist', 'out.txt'), 'utf8')).toBe('HELLO WORLD|-|no secret');
    expect(await packages(build)).toEqual(['greet']);
    expect(await npmCalls(calls)).toEqual(expect.arrayContaining(['run build', expect.stringMatching(/^prune --omit=dev/)]));
  }, STEP_TIMEOUT_MS);

  it('refuses an engines.node the stack cannot meet before installing anything', async () => {
    const build = await app(join(root, 'app'), { engines: { node: '>=99' } });

    const result = await compile(build);

    expect(result.code).not.toBe(0);
    expect(result.output).toContain(`package.json asks for Node.js >=99 (engines.node); this platform's stack has ${process.version}`);
    expect((await npmCalls(calls)).filter((call) => INSTALLS.test(call))).toEqual([]);
    expect(await list(join(build, 'node_modules'))).toEqual([]);
  }, STEP_TIMEOUT_MS);

  it('refuses an engines.node that is no semver range, and a package.json that is not JSON', async () => {
    const badRange = await app(join(root, 'range'), { engines: { node: 'the newest one' } }, false);
    const badJson = join(root, 'json');
    await writeApp(badJson, {});
    await writeFile(join(badJson, 'package.json'), '{"name": "app",');

    const range = await compile(badRange);
    const json = await compile(badJson);

    expect(range.code).not.toBe(0);
    expect(range.output).toContain('package.json\'s engines.node ("the newest one") is not a valid semver range');
    expect(json.code).not.toBe(0);
    expect(json.output).toContain('package.json is not valid JSON');
    expect((await npmCalls(calls)).filter((call) => INSTALLS.test(call))).toEqual([]);
  }, STEP_TIMEOUT_MS);

  it('fails with npm\'s reason when npm ci fails (a lockfile out of step with package.json)', async () => {
    const build = await app(join(root, 'app'));
    const pkg = JSON.parse(await readFile(join(build, 'package.json'), 'utf8'));
    pkg.dependencies.extra = 'file:vendor/extra-1.0.0.tgz';
    await writeFile(join(build, 'package.json'), JSON.stringify(pkg));

    const result = await compile(build);

    expect(result.code).not.toBe(0);
    expect(result.output).toContain('npm ci failed');
    expect(result.output).toMatch(/npm error/);
    expect(await list(join(root, 'cache', 'node'))).toEqual([]);
  }, STEP_TIMEOUT_MS);

  it('reuses the saved node_modules while the lockfile holds, still building, and installs again when it changes', async () => {
    await compile(await buildApp(join(root, 'first')));
    await rm(calls, { force: true });
    const second = await buildApp(join(root, 'second'));

    const reused = await compile(second);

    expect(reused.code).toBe(0);
    expect(reused.output).toContain('Restoring node_modules from the build cache');
    const secondCalls = await npmCalls(calls);
    expect(secondCalls.filter((call) => INSTALLS.test(call))).toEqual([]);
    expect(secondCalls).toContain('run build');
    expect(await readFile(join(second, 'dist', 'out.txt'), 'utf8')).toBe('HELLO WORLD|-|no secret');
    expect(await packages(second)).toEqual(['greet']);
    // The saved copy keeps the devDependencies the build needs.
    expect(await list(join(root, 'cache', 'node', 'node_modules'))).toEqual(expect.arrayContaining(['greet', 'shout']));

    await rm(calls, { force: true });
    const third = join(root, 'third');
    await app(third, { dependencies: { greet: 'file:vendor/greet-1.0.0.tgz', extra: 'file:vendor/extra-1.0.0.tgz' }, devDependencies: { shout: 'file:vendor/shout-1.0.0.tgz' }, scripts: { build: 'node build.js' } }, true, { 'build.js': BUILD_SCRIPT });

    const changed = await compile(third);

    expect(changed.code).toBe(0);
    expect((await npmCalls(calls)).filter((call) => INSTALLS.test(call)).map((call) => call.split(' ')[0])).toEqual(['ci']);
    expect(await packages(third)).toEqual(['extra', 'greet']);
    // One saved copy, the new one.
    expect(await list(join(root, 'cache', 'node'))).toEqual(['inputs', 'node_modules']);
    expect(await list(join(root, 'cache', 'node', 'node_modules'))).toEqual(expect.arrayContaining(['extra', 'greet', 'shout']));
  }, 3 * STEP_TIMEOUT_MS);

  it('exports the ENV_DIR files to the compile, skipping names that are not variables, never printing values', async () => {
    const build = await buildApp(join(root, 'app'));
    await writeEnvDir(join(root, 'env'), {
      GREETING: 'hi there',
      SECRET_TOKEN: 'S3CRET-VALUE',
      'bad-name': 'x',
      '1ABC': 'x',
      PATH: '/nowhere',
      IFS: '/',
      LD_PRELOAD: '/nowhere/preload.so',
      bp_build: '/elsewhere',
    });

    const result = await compile(build);

    expect(result.code).toBe(0);
    expect(await readFile(join(build, 'dist', 'out.txt'), 'utf8')).toBe('HELLO WORLD|hi there|secret set');
    expect(result.output).toContain('Skipped 2 config file(s) whose names are not variable names');
    expect(result.output).not.toContain('S3CRET-VALUE');
    expect(result.output).not.toContain('hi there');
    expect(result.output).not.toContain('preload');
  }, STEP_TIMEOUT_MS);

  it('releases `web: npm start` when npm start has something to run, and no process types otherwise', async () => {
    const withStart = join(root, 'start');
    const withServer = join(root, 'server');
    const neither = join(root, 'neither');
    await writeApp(withStart, { scripts: { start: 'node index.js' } });
    await writeApp(withServer, {}, { 'server.js': '' });
    await writeApp(neither, { scripts: { build: 'true' } });

    const web = '---\ndefault_process_types:\n  web: npm start\n';
    expect(await runStep(shell, 'node', 'release', [withStart], calls)).toEqual({ code: 0, output: web });
    expect(await runStep(shell, 'node', 'release', [withServer], calls)).toEqual({ code: 0, output: web });
    expect(await runStep(shell, 'node', 'release', [neither], calls)).toEqual({ code: 0, output: '--- {}\n' });
  });

  if (shell === 'sh') {
    const reachable = registryReachable();
    const title = 'installs a package from the npm registry';
    if (reachable) {
      it(title, async () => {
        const build = join(root, 'app');
        await writeApp(build, { dependencies: { ms: '2.1.3' } });

        const result = await compile(build);

        expect(result.code).toBe(0);
        expect(execFileSync(process.execPath, ['-e', "process.stdout.write(String(require('ms')('2h')))"], { cwd: build, encoding: 'utf8' })).toBe('7200000');
        expect(await list(join(root, 'cache', 'npm'))).toContain('_cacache');
      }, STEP_TIMEOUT_MS);
    } else if (process.env.CI === 'true') {
      it(`${title} (needs registry.npmjs.org)`, () => {
        throw new Error('the npm registry is not reachable under CI=true');
      });
    } else {
      process.stdout.write(`${title}: not run, the npm registry is not reachable\n`);
      it.skip(`${title} (skipped: the npm registry is not reachable)`, () => undefined);
    }
  }
});

/** A C addon on Node-API: `hello()` answers from compiled code. */
const ADDON_C = `#include <node_api.h>

static napi_value Hello(napi_env env, napi_callback_info info) {
  napi_value result;
  napi_create_string_utf8(env, "hello from C", NAPI_AUTO_LENGTH, &result);
  return result;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, NULL, 0, Hello, NULL, &fn);
  napi_set_named_property(env, exports, "hello", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
`;

describe('the Node.js buildpack with a native addon (the host as stack: its compiler and its node headers)', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-native-'));
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
    await removeTools();
  });

  it("compiles a dependency's binding.gyp with node-gyp against the stack's headers, downloading nothing", async () => {
    const build = join(root, 'build');
    await packLocalPackage(join(build, 'vendor'), 'svc-native', "module.exports = require('./build/Release/addon.node');\n", { gypfile: true }, {
      'binding.gyp': JSON.stringify({ targets: [{ target_name: 'addon', sources: ['addon.c'] }] }),
      'addon.c': ADDON_C,
    });
    await writeApp(build, { dependencies: { 'svc-native': 'file:vendor/svc-native-1.0.0.tgz' } }, {}, true);

    // No HOME and no node-gyp cache: headers that node-gyp would download have nowhere to come from.
    const compiled = await runStep('sh', 'node', 'compile', [build, join(root, 'cache'), join(root, 'env')], join(root, 'npm-calls'));

    expect(compiled.output).toContain('-----> Build succeeded');
    expect(compiled.code).toBe(0);
    expect(compiled.output).not.toMatch(/gyp http GET/);
    const loaded = execFileSync(process.execPath, ['-e', "process.stdout.write(require('svc-native').hello())"], { cwd: build, encoding: 'utf8' });
    expect(loaded).toBe('hello from C');
  }, STEP_TIMEOUT_MS);
});
