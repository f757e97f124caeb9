import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createEngine, unguardBuildBridge } from '@svc/scheduler-docker';
import { describeWithSandbox, sandboxUnavailable, testUidRange } from '../../scheduler-process/test/support/sandbox';
import { removeEngineInstance } from './support/docker';
import { TEST_PASSWORD_HASHING } from './support/server';

/*
 * The README followed as written (scripts/readme-check.mjs): its CLI walk, API walk and git
 * push walk, each on a fresh controller started with `npm start`, on a machine without a
 * Docker engine (DOCKER_HOST names no engine: the process scheduler, in its sandbox) and on
 * one with an engine (TEST_DOCKER_HOST: the Docker scheduler). A command that fails, or an
 * app answer other than the one the README shows, fails the walk.
 */

const ROOT = join(__dirname, '..', '..', '..');
const ENGINE = process.env.TEST_DOCKER_HOST?.trim() ? process.env.TEST_DOCKER_HOST.trim() : null;
// Three walks with two buildpack builds each, `npm start` compiling first: minutes on a busy machine.
const WALKS_TIMEOUT_MS = 8 * 60_000;

function readmeCheck(env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'scripts', 'readme-check.mjs')],
      { cwd: ROOT, env: { ...process.env, ...TEST_PASSWORD_HASHING, ...env }, maxBuffer: 64 * 1024 * 1024, timeout: WALKS_TIMEOUT_MS },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` }),
    );
  });
}

/** Runs a snippet of node against the script's exports, printing JSON. */
function scriptExports(code: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', `import * as check from ${JSON.stringify(join(ROOT, 'scripts', 'readme-check.mjs'))};\n${code}`], { cwd: ROOT }, (error, stdout) =>
      error === null ? resolve(JSON.parse(stdout)) : reject(error),
    );
  });
}

describe('the README check', () => {
  it('finds the three walks and turns each answer the README shows into a check', async () => {
    const walks = (await scriptExports(
      "import { readFileSync } from 'node:fs';\n" +
        "const blocks = check.shellBlocks(readFileSync('README.md', 'utf8')).filter((b) => check.walkOf(b) !== null);\n" +
        'console.log(JSON.stringify(blocks.map((b) => [check.walkOf(b), check.scriptOf(b, { api: 1, router: 2, git: 3 }).split("\\n").filter((l) => l.startsWith("__expect ")).map((l) => JSON.parse(l.slice(9, l.indexOf(\'" \') + 1)))])));',
    )) as Array<[string, string[]]>;
    expect(walks).toEqual([
      ['cli', ['hello, 1m']],
      ['api', ['hello from v3', 'bonjour from v4', 'hello from v5']],
      ['git', ['hello from v1, 1m', 'hello from v2, 1m', 'hello from v1, 1m']],
    ]);
  });

  it('fails a walk whose answer is not the one shown', async () => {
    const script = (await scriptExports("console.log(JSON.stringify(check.scriptOf('curl -s file:///etc/hostname   # not this machine\\n', { api: 1, router: 2, git: 3 })));")) as string;
    const code = await new Promise<number>((resolve) => execFile('bash', ['-c', script], (error) => resolve(error === null ? 0 : Number(error.code))));
    expect(code).toBe(1);
  });
});

describeWithSandbox('the README on a machine without a Docker engine (process scheduler)', () => {
  it('runs every walk as written', async () => {
    const problem = sandboxUnavailable();
    if (problem !== null) throw new Error(`the process scheduler's sandbox is unavailable under CI=true: ${problem}`);
    const { from, to } = testUidRange();
    const { code, output } = await readmeCheck({ DOCKER_HOST: `unix://${join(ROOT, 'no-engine-here.sock')}`, SANDBOX_UID_RANGE: `${from}-${to}` });
    expect(output).toContain('readme-check: the cli walk passed');
    expect(output).toContain('readme-check: the api walk passed');
    expect(output).toContain('readme-check: the git walk passed');
    expect(code).toBe(0);
  }, WALKS_TIMEOUT_MS);
});

if (ENGINE !== null) {
  describe('the README on a machine with a Docker engine (Docker scheduler)', () => {
    it('runs every walk as written', async () => {
      // The engine is shared with other tests: a network, bridge and instance name of its own.
      const tag = process.pid.toString(36);
      const names = { DOCKER_NETWORK: `svc-readme-${tag}`, DOCKER_BRIDGE: `svcrd${tag}`.slice(0, 15), DOCKER_INSTANCE: `readme-${tag}`, BUILDPACK_NETWORK: `svc-readme-build-${tag}`, BUILDPACK_BRIDGE: `svcrb${tag}`.slice(0, 15) };
      let outcome: { code: number | null; output: string };
      try {
        outcome = await readmeCheck({ DOCKER_HOST: ENGINE, ...names });
      } finally {
        // What the walks' controllers made on the shared engine and host goes with them: their
        // containers, both networks (each holds one of the engine's address pools) and the guards.
        const docker = createEngine(ENGINE);
        await removeEngineInstance(docker, { instance: names.DOCKER_INSTANCE, network: names.DOCKER_NETWORK, bridge: names.DOCKER_BRIDGE });
        await docker.getNetwork(names.BUILDPACK_NETWORK).remove().catch(() => undefined);
        await unguardBuildBridge(names.BUILDPACK_BRIDGE);
      }
      const { code, output } = outcome;
      expect(output).toContain('readme-check: the cli walk passed');
      expect(output).toContain('readme-check: the api walk passed');
      expect(output).toContain('readme-check: the git walk passed');
      expect(code).toBe(0);
    }, WALKS_TIMEOUT_MS);
  });
} else if (process.env.CI === 'true') {
  describe('the README on a machine with a Docker engine (Docker scheduler)', () => {
    it('needs a Docker engine: TEST_DOCKER_HOST is not set under CI=true', () => {
      throw new Error('TEST_DOCKER_HOST is not set: CI must start a Docker engine for the README check');
    });
  });
} else {
  process.stdout.write('The README on a Docker engine was not checked: set TEST_DOCKER_HOST to check it.\n');
}
