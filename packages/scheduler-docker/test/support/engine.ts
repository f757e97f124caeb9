/// <reference types="jest" />
import type Docker from 'dockerode';
import type { LogEntry, LogStore } from '@svc/core';
import { InMemoryLogStore } from '@svc/core/testing';
import { DockerScheduler, createEngine, pingEngine, type DockerSchedulerOptions } from '../../src';

/** The engine the Docker tests use (`TEST_DOCKER_HOST`), or null when they are not to run. */
export const TEST_DOCKER_HOST: string | null = process.env.TEST_DOCKER_HOST?.trim() ? process.env.TEST_DOCKER_HOST.trim() : null;
/** A registry on loopback the engine can pull from (`TEST_REGISTRY`, host:port), or null. */
export const TEST_REGISTRY: string | null = process.env.TEST_REGISTRY?.trim() ? process.env.TEST_REGISTRY.trim() : null;
/** The busybox image `.ci/docker-engine.sh` makes. */
export const BUSYBOX = 'svc-test/busybox:1';
/** The node image `.ci/docker-engine.sh` makes. */
export const NODE = 'svc-test/node:20';

/**
 * `describe` when TEST_DOCKER_HOST is set; else a note saying why the tests did not run and,
 * under CI=true, a failing test (CI must start an engine).
 */
export function describeWithEngine(title: string, body: () => void): void {
  if (TEST_DOCKER_HOST !== null) {
    describe(title, body);
    return;
  }
  if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs a Docker engine: TEST_DOCKER_HOST is not set (.ci/docker-engine.sh starts one)', () => {
        throw new Error('TEST_DOCKER_HOST is not set under CI=true');
      });
    });
    return;
  }
  process.stdout.write(`${title}: not run, set TEST_DOCKER_HOST (e.g. unix:///run/svcdev-docker/docker.sock) to run them.\n`);
  describe.skip(`${title} (skipped: TEST_DOCKER_HOST is not set)`, body);
}

/**
 * `it` when TEST_REGISTRY is set; else a note saying why the test did not run and, under
 * CI=true, a failing test.
 */
export function itWithRegistry(title: string, body: () => Promise<void>, timeoutMs?: number): void {
  if (TEST_REGISTRY !== null) {
    it(title, body, timeoutMs);
  } else if (process.env.CI === 'true') {
    it(`${title} (needs TEST_REGISTRY)`, () => {
      throw new Error('TEST_REGISTRY is not set under CI=true (.ci/docker-engine.sh starts a registry)');
    });
  } else {
    process.stdout.write(`${title}: not run, set TEST_REGISTRY (host:port of a registry the engine can pull from) to run it.\n`);
    it.skip(`${title} (skipped: TEST_REGISTRY is not set)`, body);
  }
}

/** A scheduler on its own network, bridge and instance label, and how to remove all of it. */
export interface TestScheduler {
  docker: Docker;
  logs: InMemoryLogStore;
  scheduler: DockerScheduler;
  options: DockerSchedulerOptions;
  /** A second scheduler with the same settings (a restarted controller). */
  again(): DockerScheduler;
  lines(app: string): Promise<string[]>;
  /** Waits until a line of the app's log matches. */
  waitForLine(app: string, pattern: RegExp, timeoutMs?: number): Promise<string>;
  cleanUp(): Promise<void>;
}

let counter = 0;

/**
 * A client of the test engine at `host` that answers, and a tag unique to this call in this
 * test process (for instance labels, names and prefixes).
 * @throws Error naming the engine when it does not answer.
 */
export async function connectTestEngine(host: string | null, what: string): Promise<{ docker: Docker; tag: string; logs: InMemoryLogStore }> {
  const docker = createEngine(host);
  const reason = await pingEngine(docker, 5000);
  if (reason !== null) throw new Error(`the ${what} at ${host ?? ''} does not answer: ${reason}`);
  counter++;
  return { docker, tag: `${process.pid.toString(36)}${counter}`, logs: new InMemoryLogStore() };
}

/** The lines of an app's log in the test store, as `source: message`. */
export async function logLines(logs: InMemoryLogStore, app: string): Promise<string[]> {
  return (await logs.tail(app, 10_000)).map((e: LogEntry) => `${e.source}: ${e.message}`);
}

/** Makes a scheduler for one test file; `cleanUp` removes its containers, network and host guard (its teardown). */
export async function testScheduler(overrides: Partial<DockerSchedulerOptions> = {}): Promise<TestScheduler> {
  const { docker, tag, logs } = await connectTestEngine(TEST_DOCKER_HOST, 'Docker engine');
  const warnings: string[] = [];
  const options: DockerSchedulerOptions = {
    docker,
    logs,
    instance: `test-${tag}`,
    network: `svc-test-${tag}`,
    bridge: `svct${tag}`.slice(0, 15),
    startTimeoutMs: 20_000,
    settleMs: 500,
    stopTimeoutMs: 2000,
    backoff: { initialMs: 200, maxMs: 2000 },
    pidsLimit: 64,
    // The test registry is on this host's loopback: the operator's allow-list names it.
    registryAllow: TEST_REGISTRY === null ? [] : [TEST_REGISTRY],
    onWarning: (message) => warnings.push(message),
    ...overrides,
  };
  const made: DockerScheduler[] = [];
  const make = (): DockerScheduler => {
    const scheduler = new DockerScheduler(options);
    made.push(scheduler);
    return scheduler;
  };
  const lines = (app: string): Promise<string[]> => logLines(logs, app);
  return {
    docker,
    logs,
    scheduler: make(),
    options,
    again: make,
    lines,
    async waitForLine(app, pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = (await lines(app)).find((line) => pattern.test(line));
        if (found !== undefined) return found;
        if (Date.now() > deadline) throw new Error(`no line of ${app}'s log matched ${pattern} within ${timeoutMs} ms:\n${(await lines(app)).join('\n')}`);
        await new Promise((done) => setTimeout(done, 100));
      }
    },
    async cleanUp() {
      await Promise.all(made.map((s) => s.shutdown()));
      // The operator's teardown: the instance's containers, its network and the network's guard.
      await make().teardown();
    },
  };
}

/** A log store that only records appends (what the scheduler needs). */
export type AppendOnly = Pick<LogStore, 'append'>;

/** The image names as the image builder's tests spell them. */
export const BUSYBOX_IMAGE = BUSYBOX;
export const NODE_IMAGE = NODE;

/** Like {@link describeWithEngine}, handing the body a getter of the test engine's client. */
export function describeWithEngineClient(title: string, body: (docker: () => Docker) => void): void {
  let docker: Docker | null = null;
  const client = (): Docker => {
    if (TEST_DOCKER_HOST === null) throw new Error('TEST_DOCKER_HOST is not set');
    docker ??= createEngine(TEST_DOCKER_HOST);
    return docker;
  };
  describeWithEngine(title, () => body(client));
}

/** Runs a command (or the image's own) in a new container of `image` with no network, and resolves with its output. */
export async function runIn(docker: Docker, image: string, cmd: string[] | null = null): Promise<string> {
  const container = await docker.createContainer({
    Image: image,
    ...(cmd === null ? {} : { Cmd: cmd }),
    HostConfig: { NetworkMode: 'none' },
    Tty: true,
  });
  try {
    await container.start();
    await container.wait();
    return (await container.logs({ stdout: true, stderr: true })).toString('utf8').replace(/\r/g, '');
  } finally {
    await container.remove({ force: true });
  }
}

/** Whether the engine has an image of that name or id. */
export async function imageExists(docker: Docker, image: string): Promise<boolean> {
  return docker.getImage(image).inspect().then(
    () => true,
    () => false,
  );
}
