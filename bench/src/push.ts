/*
 * `git push` figures, for each language of the built-in buildpacks (bench/src/push-apps.ts: a
 * Node.js app with express from the npm registry and its lockfile, a Python app with a wheel,
 * a Go app with a vendored module, a Ruby app with its gem in vendor/cache): pushed to a fresh
 * controller until the router serves it, then pushed again with one source file changed until
 * the router serves the new version. The second push reuses the app's build cache (installed
 * modules, virtualenv, Go's build cache, gems). Run on the process scheduler (the host's
 * languages), and on the Docker scheduler when an engine is named (TEST_DOCKER_HOST or
 * DOCKER_HOST): Node.js on its stack, the other languages only with BENCH_STACK_IMAGE naming a
 * stack that has them (`scripts/make-stack-image.sh --debian`). Needs git, ssh and ssh-keygen.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get } from './deploy-speed';
import type { Language, PushApp } from './push-apps';
import { api } from './docker';
import { freePort, startServer, type ServerProcess } from './processes';

/** What one scheduler's pushes measured, in milliseconds. */
export interface PushResult {
  scheduler: 'process' | 'docker';
  language: Language;
  /** The app's dependency, as the report names it. */
  what: string;
  /** The Docker stack image (STACK_IMAGE), when not the default. */
  stack: string | null;
  /** The first push (dependencies installed) until the router served the app. */
  firstPushToServingMs: number;
  /** A second push, one file changed and the lockfile not, until the router served the new version. */
  secondPushToServingMs: number;
  /** first / second. */
  speedup: number;
}

const SECRET_KEY = 'push-bench-secret-key-0123456789abcdef01';

function exec(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: options.cwd, env: options.env ?? process.env, timeout: options.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stderr}\n${stdout}`));
      else resolve(`${stdout}${stderr}`);
    });
  });
}

/** Waits until the router answers 200 with `expected` in the body. */
async function untilServed(port: number, app: string, expected: string, began: number): Promise<number> {
  for (;;) {
    const answer = await get(port, `${app}.localhost`);
    if (answer.status === 200 && answer.body.includes(expected)) return performance.now() - began;
    if (performance.now() - began > 300_000) throw new Error(`the router did not serve ${expected} within 300 s (last: ${answer.status} ${answer.body.slice(0, 200)})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Writes the app's first version and commits it. */
async function makeApp(app: PushApp, dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  await mkdir(dir, { recursive: true });
  await app.write(dir, 'v1', true);
  await exec('git', ['init', '-q', '-b', 'main'], { cwd: dir, env });
  await exec('git', ['add', '.'], { cwd: dir, env });
  await exec('git', ['commit', '-q', '-m', 'first version'], { cwd: dir, env });
}

/** Pushes and changes `pushed` on a controller of the given scheduler (and stack); cleans up after itself. */
export async function benchPush(
  root: string,
  scheduler: 'process' | 'docker',
  dockerHost: string | null,
  log: (line: string) => void,
  pushed: PushApp,
  stack: string | null = null,
): Promise<PushResult> {
  const work = await mkdtemp(join(tmpdir(), `svc-bench-push-${scheduler}-`));
  const tag = process.pid.toString(36);
  const gitPort = await freePort();
  const routerPort = await freePort();
  const env: Record<string, string> = {
    SCHEDULER: scheduler,
    DATA_DIR: join(work, 'data'),
    GIT_SSH_PORT: String(gitPort),
    ROUTER_PORT: String(routerPort),
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SECRET_KEY,
    ...(scheduler === 'docker' && dockerHost !== null
      ? { DOCKER_HOST: dockerHost, DOCKER_NETWORK: `svc-pbench-${tag}`, DOCKER_BRIDGE: `svcp${tag}`.slice(0, 15), DOCKER_INSTANCE: `pbench-${tag}`, ...(stack === null ? {} : { STACK_IMAGE: stack }) }
      : {}),
  };
  const home = join(work, 'home');
  await mkdir(home, { recursive: true });
  const gitEnv: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@example.com',
  };
  let server: ServerProcess | null = null;
  try {
    await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(home, 'id'), '-C', 'bench@example.com'], { env: gitEnv });
    gitEnv.GIT_SSH_COMMAND = `ssh -i ${join(home, 'id')} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p ${gitPort}`;
    const appDir = join(work, 'app');
    await makeApp(pushed, appDir, gitEnv);

    server = await startServer(`controller (${scheduler})`, join(root, 'packages', 'server', 'dist', 'main.js'), env);
    const credentials = { username: 'pushbench', password: 'Push-bench-1', email: 'pushbench@example.com' };
    await api(server.url, 'POST', '/v1/auth/register/', null, credentials);
    const token = ((await api(server.url, 'POST', '/v1/auth/login/', null, credentials)).json as { token: string }).token;
    const publicKey = (await exec('cat', [join(home, 'id.pub')])).trim();
    const key = await api(server.url, 'POST', '/v1/keys/', token, { id: 'bench', public: publicKey });
    if (key.status !== 201) throw new Error(`adding the key answered ${key.status}: ${JSON.stringify(key.json)}`);
    const app = `pushbench-${tag}`;
    const created = await api(server.url, 'POST', '/v1/apps/', token, { id: app });
    if (created.status !== 201) throw new Error(`creating the app answered ${created.status}: ${JSON.stringify(created.json)}`);
    if (Object.keys(pushed.config).length > 0) {
      const config = await api(server.url, 'POST', `/v1/apps/${app}/config/`, token, { values: pushed.config });
      if (config.status !== 201) throw new Error(`setting the config answered ${config.status}: ${JSON.stringify(config.json)}`);
    }
    await exec('git', ['remote', 'add', 'svc', `ssh://git@127.0.0.1:${gitPort}/${app}.git`], { cwd: appDir, env: gitEnv });

    log(`push (${scheduler}): first push of the ${pushed.language} app (${pushed.what})`);
    let began = performance.now();
    await exec('git', ['push', '-q', 'svc', 'main'], { cwd: appDir, env: gitEnv });
    const firstPushToServingMs = await untilServed(routerPort, app, 'hello v1', began);

    await pushed.write(appDir, 'v2', false);
    await exec('git', ['commit', '-q', '-am', 'second version'], { cwd: appDir, env: gitEnv });
    log(`push (${scheduler}): second push, one file changed`);
    began = performance.now();
    await exec('git', ['push', '-q', 'svc', 'main'], { cwd: appDir, env: gitEnv });
    const secondPushToServingMs = await untilServed(routerPort, app, 'hello v2', began);
    await api(server.url, 'DELETE', `/v1/apps/${app}/`, token);
    return { scheduler, language: pushed.language, what: pushed.what, stack, firstPushToServingMs, secondPushToServingMs, speedup: firstPushToServingMs / secondPushToServingMs };
  } catch (error) {
    if (server !== null) log(`push (${scheduler}) failed; the controller: ${server.postMortem()}`);
    throw error;
  } finally {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** The figures as lines of the report, with the issue's targets. */
export function pushReport(results: PushResult[]): string {
  const fmt = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
  const lines = ['', 'git push of an app of each language, push to served through the router:', ''];
  for (const r of results) {
    lines.push(
      `  ${r.scheduler.padEnd(8)} ${r.language.padEnd(7)} ${`(${r.what}${r.stack === null ? '' : `, stack ${r.stack}`})`.padEnd(62)} first push ${fmt(r.firstPushToServingMs).padStart(8)}   second push (one file changed) ${fmt(r.secondPushToServingMs).padStart(8)}   ` +
        `${r.speedup.toFixed(1)}x faster  [target >= 2x: ${r.speedup >= 2 ? 'yes' : 'NO'}; second < 5 s: ${r.secondPushToServingMs < 5000 ? 'yes' : 'NO'}]`,
    );
  }
  lines.push('');
  return lines.join('\n');
}
