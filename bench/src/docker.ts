/*
 * Docker scheduler figures: the first deploy of a local image until the router serves it,
 * and the round trip of `run` (a one-off container of the release's image), through a
 * controller started with SCHEDULER=docker on the engine at TEST_DOCKER_HOST or DOCKER_HOST.
 * Needs the image svc-test/busybox:1 (`.ci/docker-engine.sh images` makes it).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LABELS, createEngine, unguardHostFromBridge } from '@svc/scheduler-docker';
import { freePort, startServer, type ServerProcess } from './processes';

/** What the Docker part of the benchmark measured, in milliseconds. */
export interface DockerResult {
  dockerHost: string;
  image: string;
  /** POST builds until it answered (the new container is up by then). */
  deployRequestMs: number;
  /** POST builds until the router first answered 200 for the app. */
  firstDeployToServingMs: number;
  /** `run` of `true`, each time: request to answer. */
  runRoundTripsMs: number[];
  runRoundTripMedianMs: number;
}

const IMAGE = 'svc-test/busybox:1';
const RUNS = 5;
const SECRET_KEY = 'docker-bench-secret-key-0123456789abcdef';

/** One JSON call to the controller's API: its status and its body (parsed when it is JSON). */
export async function api(url: string, method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token === null ? {} : { Authorization: `token ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    // Not JSON: keep the text.
  }
  return { status: response.status, json };
}

function routerStatus(port: number, app: string): Promise<number> {
  // fetch() does not send a Host header of our choosing: node:http does.
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/passwd', headers: { Host: `${app}.localhost` }, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** Runs the Docker measurements against the engine at `dockerHost` and cleans up after itself. */
export async function benchDocker(root: string, dockerHost: string, log: (message: string) => void): Promise<DockerResult> {
  const docker = createEngine(dockerHost);
  await docker.getImage(IMAGE).inspect().catch(() => {
    throw new Error(`the engine at ${dockerHost} has no ${IMAGE}: run .ci/docker-engine.sh images with DOCKER_HOST=${dockerHost}`);
  });
  const tag = process.pid.toString(36);
  const env = {
    SCHEDULER: 'docker',
    DOCKER_HOST: dockerHost,
    DOCKER_NETWORK: `svc-bench-${tag}`,
    DOCKER_BRIDGE: `svcb${tag}`.slice(0, 15),
    DOCKER_INSTANCE: `bench-${tag}`,
    GIT_SSH_PORT: 'off',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SECRET_KEY,
  };
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-docker-'));
  const routerPort = await freePort();
  let server: ServerProcess | null = null;
  try {
    server = await startServer('controller (docker)', join(root, 'packages', 'server', 'dist', 'main.js'), { ...env, DATA_DIR: dataDir, ROUTER_PORT: String(routerPort) });
    const url = server.url;
    const credentials = { username: 'dockerbench', password: 'Docker-bench-1', email: 'dockerbench@example.com' };
    await api(url, 'POST', '/v1/auth/register/', null, credentials);
    const token = ((await api(url, 'POST', '/v1/auth/login/', null, credentials)).json as { token: string }).token;
    const app = `bench-${tag}`;
    await api(url, 'POST', '/v1/apps/', token, { id: app });

    log(`docker: deploying ${IMAGE} to ${app}`);
    const began = performance.now();
    const build = await api(url, 'POST', `/v1/apps/${app}/builds/`, token, { image: IMAGE, procfile: { web: 'exec httpd -f -p "$PORT" -h /etc' } });
    const deployRequestMs = performance.now() - began;
    if (build.status !== 201) throw new Error(`the deploy answered ${build.status}: ${JSON.stringify(build.json)}`);
    while ((await routerStatus(routerPort, app)) !== 200) {
      if (performance.now() - began > 60_000) throw new Error('the router did not serve the app within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const firstDeployToServingMs = performance.now() - began;

    log(`docker: ${RUNS} runs`);
    const runRoundTripsMs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const start = performance.now();
      const result = await api(url, 'POST', `/v1/apps/${app}/run/`, token, { command: 'true' });
      runRoundTripsMs.push(performance.now() - start);
      if (result.status !== 200) throw new Error(`run answered ${result.status}: ${JSON.stringify(result.json)}`);
    }
    await api(url, 'DELETE', `/v1/apps/${app}/`, token);
    return {
      dockerHost,
      image: IMAGE,
      deployRequestMs,
      firstDeployToServingMs,
      runRoundTripsMs,
      runRoundTripMedianMs: median(runRoundTripsMs),
    };
  } finally {
    await server?.stop();
    const left = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${env.DOCKER_INSTANCE}`] } }).catch(() => []);
    await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
    await docker.getNetwork(env.DOCKER_NETWORK).remove().catch(() => undefined);
    await unguardHostFromBridge(env.DOCKER_BRIDGE).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The figures as lines of the report. */
export function dockerReport(result: DockerResult): string {
  const fmt = (ms: number): string => `${Math.round(ms)} ms`;
  return [
    '',
    `Docker scheduler (${result.dockerHost}, image ${result.image}):`,
    '',
    `  first deploy, POST builds answered (container up):  ${fmt(result.deployRequestMs)}`,
    `  first deploy to serving through the router:          ${fmt(result.firstDeployToServingMs)}`,
    `  run round trip (one-off container, median of ${result.runRoundTripsMs.length}):   ${fmt(result.runRoundTripMedianMs)}  (${result.runRoundTripsMs.map(fmt).join(', ')})`,
    '',
  ].join('\n');
}
