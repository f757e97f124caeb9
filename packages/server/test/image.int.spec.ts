import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { family, parseExposition, sampleValue } from '../../metrics-prometheus/test/support/exposition';
import { buildControllerImage } from './support/controller-image';

/*
 * The controller image, built with the repository's Dockerfile on a Docker engine
 * (TEST_DOCKER_HOST) without any registry: a node base image made from this machine's node
 * (scripts/make-node-base.sh; TEST_NODE_BASE_IMAGE names one already made), the packages
 * compiled here and staged with production dependencies only (scripts/build-image.sh
 * --prebuilt; TEST_CONTROLLER_IMAGE names one already made so, as .ci/run does once for this
 * test and the compose test). The container must become healthy by its own HEALTHCHECK, run
 * as a user other than root, answer /readyz and /metrics from the host, and stop cleanly on
 * SIGTERM.
 */

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const ENGINE = process.env.TEST_DOCKER_HOST?.trim() ? process.env.TEST_DOCKER_HOST.trim() : null;
const BASE = process.env.TEST_NODE_BASE_IMAGE?.trim() || null;
const PREBUILT = process.env.TEST_CONTROLLER_IMAGE?.trim() || null;
// Making the base and building the image take minutes on a busy two-core machine.
const BUILD_TIMEOUT_MS = 15 * 60_000;

async function docker(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { env: { ...process.env, DOCKER_HOST: ENGINE ?? '' }, maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

async function script(name: string, ...args: string[]): Promise<void> {
  await run(join(ROOT, 'scripts', name), args, {
    cwd: ROOT,
    env: { ...process.env, DOCKER_HOST: ENGINE ?? '' },
    maxBuffer: 64 * 1024 * 1024,
    timeout: BUILD_TIMEOUT_MS,
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

function describeWithEngine(title: string, body: () => void): void {
  if (ENGINE !== null) {
    describe(title, body);
  } else if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs a Docker engine: TEST_DOCKER_HOST is not set under CI=true', () => {
        throw new Error('TEST_DOCKER_HOST is not set: CI must start a Docker engine for the image test');
      });
    });
  } else {
    process.stdout.write(`${title}: not run, set TEST_DOCKER_HOST (e.g. unix:///run/svcdev-docker/docker.sock) to build and run the image.\n`);
    describe.skip(`${title} (skipped: TEST_DOCKER_HOST is not set)`, body);
  }
}

describeWithEngine('the controller image', () => {
  const suffix = `${process.pid}-${randomBytes(3).toString('hex')}`;
  const tag = PREBUILT ?? `svc-image-test/controller:${suffix}`;
  const name = `svc-image-test-${suffix}`;
  // The images this file makes, removed after it; those it is given stay. A base of its own:
  // another test file may be using (or removing) one of a shared name at the same time.
  const made: string[] = [];
  let url = '';

  beforeAll(async () => {
    if (PREBUILT === null) {
      const base = BASE ?? `svc-image-test/node-base:${suffix}`;
      if (BASE === null) {
        await script('make-node-base.sh', base);
        made.push(base);
      }
      await buildControllerImage(() => script('build-image.sh', '--prebuilt', '--base', base, '-t', tag));
      made.push(tag);
    }
    await docker(
      'run', '-d', '--name', name,
      '-e', `SECRET_KEY=${randomBytes(32).toString('hex')}`,
      '-e', 'LOG_LEVEL=warn',
      '-e', 'METRICS_TOKEN=image-test-metrics-token',
      // Neither an engine nor root in the container: apps could not run, /readyz would say
      // `degraded` and the HEALTHCHECK unhealthy. Unconfined apps make the controller whole.
      '-e', 'UNSAFE_SINGLE_USER_DEV=1',
      '-p', '127.0.0.1::8000',
      tag,
    );
    const published = await docker('port', name, '8000/tcp');
    url = `http://${(published.split('\n')[0] ?? '').trim()}`;
  }, BUILD_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    if (ENGINE === null) return;
    await docker('rm', '-f', '-v', name).catch(() => undefined);
    for (const image of made.reverse()) await docker('image', 'rm', '-f', image).catch(() => undefined);
  }, 120_000);

  it('becomes healthy by its own HEALTHCHECK on /readyz', async () => {
    const status = await waitFor('the container to become healthy', 180_000, async () => {
      const health = await docker('inspect', '-f', '{{.State.Status}} {{.State.Health.Status}}', name);
      if (health.startsWith('exited')) throw new Error(`the container exited: ${await docker('logs', '--tail', '20', name)}`);
      return health === 'running healthy' ? health : null;
    });
    expect(status).toBe('running healthy');

    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', sandbox: 'off' });
  }, 240_000);

  it('runs as an unprivileged user with its data in the /data volume', async () => {
    expect(await docker('exec', name, 'id', '-u')).toBe('1000');
    const mounts = await docker('inspect', '-f', '{{range .Mounts}}{{.Destination}} {{end}}', name);
    expect(mounts.split(' ')).toContain('/data');
    expect(await docker('exec', name, 'ls', '/data')).toContain('controller.sqlite');
  }, 60_000);

  it('serves metrics behind METRICS_TOKEN', async () => {
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    const res = await fetch(`${url}/metrics`, { headers: { Authorization: 'Bearer image-test-metrics-token' } });
    expect(res.status).toBe(200);
    const families = parseExposition(await res.text());
    expect(sampleValue(families, 'svc_http_requests_total', { route: '/readyz', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(family(families, 'nodejs_eventloop_lag_seconds').type).toBe('GAUGE');
  }, 60_000);

  it('stops cleanly on SIGTERM (exit code 0)', async () => {
    await docker('stop', '-t', '30', name);
    expect(await docker('inspect', '-f', '{{.State.ExitCode}}', name)).toBe('0');
  }, 60_000);
});
