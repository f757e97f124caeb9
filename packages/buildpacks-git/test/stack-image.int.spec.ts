import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BUILTIN_BUILDPACKS_DIR } from '@svc/buildpacks-git';
import { packLocalPackage, removeTools, writeApp } from './support/buildpack-run';

/*
 * The stack image scripts/make-stack-image.sh makes, on a Docker engine (TEST_DOCKER_HOST):
 * node and npm run in it as the app's user (uid 10000) with a writable HOME, `npm ci` of an
 * app with a `file:` dependency works in it without a network, and the Node.js buildpack
 * compiles an app in it as that user, the second time from its cache.
 */

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const ENGINE = process.env.TEST_DOCKER_HOST?.trim() ? process.env.TEST_DOCKER_HOST.trim() : null;
const IMAGE = `localhost/svc-stack-test:${randomBytes(4).toString('hex')}`;
const APP_USER = '10000:10000';

function dockerEnv(): NodeJS.ProcessEnv {
  return { ...process.env, DOCKER_HOST: ENGINE ?? '' };
}

/** `docker run --rm -i --network none --user 10000:10000 IMAGE sh -c script`, `input` (a tar stream) on its stdin. */
function runInImage(script: string, input: Buffer | null = null): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', ['run', '--rm', '-i', '--network', 'none', '--user', APP_USER, IMAGE, 'sh', '-c', script], {
      env: dockerEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: Buffer.concat(chunks).toString('utf8') }));
    child.stdin.end(input ?? Buffer.alloc(0));
  });
}

/** A tar stream of `directory`'s contents, made by the host's tar. */
async function tarOf(directory: string): Promise<Buffer> {
  const { stdout } = await run('tar', ['-C', directory, '-c', '.'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

function describeWithEngine(title: string, body: () => void): void {
  if (ENGINE !== null) {
    describe(title, body);
  } else if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs a Docker engine: TEST_DOCKER_HOST is not set under CI=true', () => {
        throw new Error('TEST_DOCKER_HOST is not set: CI must start a Docker engine for the stack image test');
      });
    });
  } else {
    process.stdout.write(`${title}: not run, set TEST_DOCKER_HOST (.ci/docker-engine.sh starts an engine) to run them.\n`);
    describe.skip(`${title} (skipped: TEST_DOCKER_HOST is not set)`, body);
  }
}

describeWithEngine('the stack image (scripts/make-stack-image.sh)', () => {
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'svc-stack-'));
    await run(join(ROOT, 'scripts', 'make-stack-image.sh'), [IMAGE], { cwd: ROOT, env: dockerEnv(), maxBuffer: 16 * 1024 * 1024 });
    // An app depending on a local tarball, with its lockfile, made on the host.
    const app = join(work, 'files', 'app');
    await packLocalPackage(join(app, 'vendor'), 'greet', "module.exports = (name) => 'hello ' + name;\n");
    await writeApp(app, { dependencies: { greet: 'file:vendor/greet-1.0.0.tgz' }, scripts: { start: 'node server.js' } }, { 'server.js': '' }, true);
    await mkdir(join(work, 'files', 'env'));
    await cp(join(BUILTIN_BUILDPACKS_DIR, 'node'), join(work, 'files', 'buildpack'), { recursive: true });
  }, 10 * 60_000);

  afterAll(async () => {
    await run('docker', ['image', 'rm', '--force', IMAGE], { env: dockerEnv() }).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
    await removeTools();
  }, 120_000);

  it('runs node and npm as the app user, whose HOME (/app) is its own and writable', async () => {
    const result = await runInImage('id -u; echo "$HOME"; stat -c %u /app; npm --version; npx --version; node -e "console.log(1 + 1)"; touch "$HOME/probe" && echo writable');

    expect(result.code).toBe(0);
    const npmVersion = (await run('npm', ['--version'])).stdout.trim();
    expect(result.output.split('\n')).toEqual(['10000', '/app', '10000', npmVersion, npmVersion, '2', 'writable', '']);
  }, 120_000);

  it('runs npm ci of an app with a file: dependency, without a network', async () => {
    const files = await tarOf(join(work, 'files'));

    const result = await runInImage(
      'cd /app && tar -x && cd app && npm ci --no-audit --no-fund && node -e "process.stdout.write(require(\'greet\')(\'stack\'))"',
      files,
    );

    expect(result.output).toContain('added 1 package');
    expect(result.output.endsWith('hello stack')).toBe(true);
    expect(result.code).toBe(0);
  }, 180_000);

  it('compiles with the Node.js buildpack as the app user, HOME unset, the second compile from the cache', async () => {
    const files = await tarOf(join(work, 'files'));
    const compile = 'env -u HOME /app/buildpack/bin/compile /app/app /tmp/cache /app/env';

    const result = await runInImage(
      `cd /app && tar -x && ${compile} && rm -rf /app/app/node_modules && ${compile} && /app/buildpack/bin/release /app/app && cd /app/app && node -e "process.stdout.write(require('greet')('again'))"`,
      files,
    );

    expect(result.output).toContain('-----> Installing dependencies');
    expect(result.output).toContain('Running npm ci (package-lock.json)');
    expect(result.output).toContain('Restoring node_modules from the build cache');
    expect(result.output).toContain('default_process_types:\n  web: npm start');
    expect(result.output.endsWith('hello again')).toBe(true);
    expect(result.code).toBe(0);
  }, 180_000);
});
