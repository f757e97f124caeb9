/*
 * Deploy speed (`npm run bench -- deploy`): on a Docker engine (TEST_DOCKER_HOST or
 * DOCKER_HOST), a bare `docker run` of a small HTTP app image until it answers HTTP, against
 * the controller (SCHEDULER=docker on the same engine) deploying the same image until its
 * router serves it, and changing the app's config (a new release: a new container) until the
 * router serves the new one. Target: the first deploy within 1.2x the bare figure.
 *
 * The image is svc-test/busybox:1 (made offline by `.ci/docker-engine.sh images`): busybox
 * httpd serving a page that shows the value of MARK. Knob: BENCH_DEPLOY_ROUNDS (default 3;
 * the figures are medians).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LABELS, createEngine, unguardHostFromBridge } from '@svc/scheduler-docker';
import { api } from './docker';
import { freePort, startServer, type ServerProcess } from './processes';

export const IMAGE = 'svc-test/busybox:1';
/** The web process: busybox httpd serving the value of MARK. */
export const WEB_COMMAND = 'mkdir -p /tmp/www && echo "mark=$MARK" > /tmp/www/index.html && exec httpd -f -p "$PORT" -h /tmp/www';
const ROUNDS = Number(process.env.BENCH_DEPLOY_ROUNDS ?? '3');
const SECRET_KEY = 'deploy-bench-secret-key-0123456789abcdef';

/** What the section measured, in milliseconds. */
export interface DeploySpeedResult {
  dockerHost: string;
  image: string;
  bareRunMs: number[];
  firstDeployMs: number[];
  configChangeMs: number[];
  /** Medians. */
  bare: number;
  firstDeploy: number;
  configChange: number;
  /** firstDeploy / bare: the target is at most 1.2. */
  ratio: number;
}

/** The median of the values (the upper one of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** An HTTP GET of `/` with this Host header: status and body (status 0 when nothing answers). */
export function get(port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { Host: host }, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/** Polls every 10 ms until the answer is 200 with `expected` in its body; the time since `began`. */
export async function untilAnswered(port: number, host: string, expected: string, began: number, limitMs = 120_000): Promise<number> {
  for (;;) {
    const answer = await get(port, host);
    if (answer.status === 200 && answer.body.includes(expected)) return performance.now() - began;
    if (performance.now() - began > limitMs) throw new Error(`${host} on ${port} did not answer ${expected} within ${limitMs} ms (last: ${answer.status})`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function docker(dockerHost: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('docker', ['-H', dockerHost, ...args], { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`docker ${args.join(' ')}: ${error.message} ${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

/** `docker run -d` of the image with a published port, until it answers; the container is removed after. */
async function bareRun(dockerHost: string, mark: string): Promise<number> {
  const port = await freePort();
  const began = performance.now();
  const run = docker(dockerHost, ['run', '-d', '--rm', '-e', 'PORT=8080', '-e', `MARK=${mark}`, '-p', `127.0.0.1:${port}:8080`, IMAGE, 'sh', '-c', WEB_COMMAND]);
  run.catch(() => undefined);
  const answered = untilAnswered(port, 'localhost', `mark=${mark}`, began);
  let id = '';
  try {
    id = await run;
    return await answered;
  } finally {
    if (id !== '') await docker(dockerHost, ['rm', '-f', id]).catch(() => undefined);
  }
}

/** Environment of a controller with SCHEDULER=docker on the engine, with names of its own. */
export function dockerControllerEnv(dockerHost: string, tag: string): Record<string, string> {
  return {
    SCHEDULER: 'docker',
    DOCKER_HOST: dockerHost,
    DOCKER_NETWORK: `svc-${tag}`,
    DOCKER_BRIDGE: `svc${tag}`.slice(0, 15),
    DOCKER_INSTANCE: tag,
    GIT_SSH_PORT: 'off',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SECRET_KEY,
  };
}

/** Removes what a controller with that environment left on the engine. */
export async function cleanEngine(dockerHost: string, env: Record<string, string>): Promise<void> {
  const engine = createEngine(dockerHost);
  const left = await engine.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${env.DOCKER_INSTANCE}`] } }).catch(() => []);
  await Promise.all(left.map((c: { Id: string }) => engine.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  await engine.getNetwork(env.DOCKER_NETWORK as string).remove().catch(() => undefined);
  await unguardHostFromBridge(env.DOCKER_BRIDGE as string).catch(() => undefined);
}

/** Registers a user and logs in: its token. */
export async function loginAs(url: string, username: string): Promise<string> {
  const credentials = { username, password: 'Deploy-bench-1', email: `${username}@example.com` };
  await api(url, 'POST', '/v1/auth/register/', null, credentials);
  return ((await api(url, 'POST', '/v1/auth/login/', null, credentials)).json as { token: string }).token;
}

/** Runs the section on the engine at `dockerHost`; cleans up after itself. */
export async function benchDeploySpeed(root: string, dockerHost: string, log: (line: string) => void): Promise<DeploySpeedResult> {
  await docker(dockerHost, ['image', 'inspect', IMAGE]).catch(() => {
    throw new Error(`the engine at ${dockerHost} has no ${IMAGE}: run .ci/docker-engine.sh images with DOCKER_HOST=${dockerHost}`);
  });
  const tag = `dspeed-${process.pid.toString(36)}`;
  const env = dockerControllerEnv(dockerHost, tag);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-deploy-'));
  const routerPort = await freePort();
  let server: ServerProcess | null = null;
  const result = { bareRunMs: [] as number[], firstDeployMs: [] as number[], configChangeMs: [] as number[] };
  try {
    server = await startServer('controller (docker)', join(root, 'packages', 'server', 'dist', 'main.js'), { ...env, DATA_DIR: dataDir, ROUTER_PORT: String(routerPort) });
    const token = await loginAs(server.url, 'deploybench');
    for (let round = 1; round <= ROUNDS; round++) {
      const bare = await bareRun(dockerHost, `bare${round}`);
      result.bareRunMs.push(bare);
      const app = `dspeed-${round}`;
      const host = `${app}.localhost`;
      const created = await api(server.url, 'POST', '/v1/apps/', token, { id: app });
      if (created.status !== 201) throw new Error(`creating ${app} answered ${created.status}`);
      let began = performance.now();
      const build = await api(server.url, 'POST', `/v1/apps/${app}/builds/`, token, { image: IMAGE, procfile: { web: WEB_COMMAND } });
      if (build.status !== 201) throw new Error(`the deploy answered ${build.status}: ${JSON.stringify(build.json)}`);
      result.firstDeployMs.push(await untilAnswered(routerPort, host, 'mark=', began));
      began = performance.now();
      const changed = await api(server.url, 'POST', `/v1/apps/${app}/config/`, token, { values: { MARK: `v${round}` } });
      if (changed.status !== 201) throw new Error(`the config change answered ${changed.status}: ${JSON.stringify(changed.json)}`);
      result.configChangeMs.push(await untilAnswered(routerPort, host, `mark=v${round}`, began));
      log(`deploy round ${round}: bare docker run ${Math.round(bare)} ms, first deploy ${Math.round(result.firstDeployMs.at(-1) ?? 0)} ms, config change ${Math.round(result.configChangeMs.at(-1) ?? 0)} ms`);
      await api(server.url, 'DELETE', `/v1/apps/${app}/`, token);
    }
  } catch (error) {
    if (server !== null) log(`deploy speed failed; the controller: ${server.postMortem()}`);
    throw error;
  } finally {
    await server?.stop();
    await cleanEngine(dockerHost, env);
    await rm(dataDir, { recursive: true, force: true });
  }
  const bare = median(result.bareRunMs);
  const firstDeploy = median(result.firstDeployMs);
  return { dockerHost, image: IMAGE, ...result, bare, firstDeploy, configChange: median(result.configChangeMs), ratio: firstDeploy / bare };
}

/** The figures as lines of the report. */
export function deploySpeedReport(result: DeploySpeedResult): string {
  const ms = (values: number[]): string => values.map((value) => Math.round(value)).join(', ');
  return [
    '',
    `Deploy speed (${result.dockerHost}, image ${result.image}; medians of ${result.bareRunMs.length}, ms):`,
    '',
    `  bare docker run until it answers HTTP:                  ${Math.round(result.bare)}  (${ms(result.bareRunMs)})`,
    `  first deploy until served through the router:           ${Math.round(result.firstDeploy)}  (${ms(result.firstDeployMs)})`,
    `  config change (new release) until served by the new one: ${Math.round(result.configChange)}  (${ms(result.configChangeMs)})`,
    `  first deploy / bare docker run: ${result.ratio.toFixed(2)}  [target <= 1.2: ${result.ratio <= 1.2 ? 'yes' : 'NO'}]`,
    '',
  ].join('\n');
}
