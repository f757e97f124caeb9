/// <reference types="jest" />
import { request } from 'node:http';
import type Docker from 'dockerode';
import { InMemoryLogStore } from '@svc/core/testing';
import { LABELS, SwarmScheduler, type SwarmSchedulerOptions } from '../../src';
import { connectTestEngine, logLines } from './engine';
import { holdLockDuringFile, type LockMode } from './host-lock';

const env = (name: string): string | null => (process.env[name]?.trim() ? (process.env[name] as string).trim() : null);

/** A manager of the test swarm (`TEST_SWARM_HOST`, a DOCKER_HOST value), or null when the Swarm tests are not to run. */
export const TEST_SWARM_HOST = env('TEST_SWARM_HOST');
/** The engine of the swarm's worker (`TEST_SWARM_WORKER_HOST`), or null for a swarm of one node. */
export const TEST_SWARM_WORKER_HOST = env('TEST_SWARM_WORKER_HOST');
/** The registry every node pulls the test images from (`TEST_SWARM_REGISTRY`, host:port), or null: images are the nodes' own. */
export const TEST_SWARM_REGISTRY = env('TEST_SWARM_REGISTRY');

/** The swarm network of the tasks (`TEST_SWARM_NETWORK`: scope swarm, ICC off), or null: the nodes' default bridge. */
export const TEST_SWARM_NETWORK = env('TEST_SWARM_NETWORK');

/** Whether the nodes have the host firewall of docs/operations.md (`TEST_SWARM_FIREWALL`, set by .ci/swarm.sh). */
export const TEST_SWARM_FIREWALL = env('TEST_SWARM_FIREWALL') !== null;

/** The busybox test image, as every node of the swarm can get it. */
export const SWARM_BUSYBOX = TEST_SWARM_REGISTRY === null ? 'svc-test/busybox:1' : `${TEST_SWARM_REGISTRY}/svc-test/busybox:1`;

function describeNeeding(variable: string, value: string | null, how: string, title: string, body: () => void): void {
  if (value !== null) {
    describe(title, body);
    return;
  }
  if (process.env.CI === 'true') {
    describe(title, () => {
      it(`needs ${how}: ${variable} is not set (.ci/swarm.sh starts one)`, () => {
        throw new Error(`${variable} is not set under CI=true`);
      });
    });
    return;
  }
  process.stdout.write(`${title}: not run, set ${variable} (.ci/swarm.sh starts a two-node swarm and prints it) to run them.\n`);
  describe.skip(`${title} (skipped: ${variable} is not set)`, body);
}

/**
 * `describe` when TEST_SWARM_HOST is set; else a note saying why the tests did not run and,
 * under CI=true, a failing test (CI must start a swarm).
 */
export function describeWithSwarm(title: string, body: () => void): void {
  describeNeeding('TEST_SWARM_HOST', TEST_SWARM_HOST, 'a swarm manager', title, body);
}

/** Like {@link describeWithSwarm}, for tests that need the tasks' network (TEST_SWARM_NETWORK). */
export function describeWithSwarmNetwork(title: string, body: () => void): void {
  describeNeeding('TEST_SWARM_NETWORK', TEST_SWARM_HOST === null ? null : TEST_SWARM_NETWORK, 'a swarm network with inter-container communication off', title, body);
}

/** Like {@link describeWithSwarm}, for tests that need a second node (TEST_SWARM_WORKER_HOST). */
export function describeWithTwoNodes(title: string, body: () => void): void {
  describeNeeding('TEST_SWARM_WORKER_HOST', TEST_SWARM_HOST === null ? null : TEST_SWARM_WORKER_HOST, 'a swarm of two nodes', title, body);
}

/**
 * Holds the test swarm's lock for the whole test file (call it at the file's top level): test
 * files run side by side in several processes on the one swarm of `.ci/swarm.sh`. A file that
 * changes the swarm's nodes (drains the worker, say: Swarm then moves every file's tasks off it)
 * takes it `exclusive`; a file that runs tasks, or counts on both nodes being active, takes it
 * `shared`. Nothing is held when no swarm is configured.
 */
export function holdSwarm(mode: LockMode, host: string | null = TEST_SWARM_HOST): void {
  if (host !== null) holdLockDuringFile(`swarm ${host}`, mode);
}

/** A Swarm scheduler on its own instance label and service prefix, and how to remove all it made. */
export interface TestSwarm {
  docker: Docker;
  logs: InMemoryLogStore;
  scheduler: SwarmScheduler;
  options: SwarmSchedulerOptions;
  /** A second scheduler with the same settings (a restarted controller). */
  again(): SwarmScheduler;
  lines(app: string): Promise<string[]>;
  /** How often the endpoints were reported changed. */
  changes(): number;
  cleanUp(): Promise<void>;
}

/** Makes a Swarm scheduler with short health checks, monitor periods and drains (quick tests). */
export async function testSwarm(overrides: Partial<SwarmSchedulerOptions> = {}): Promise<TestSwarm> {
  const { docker, tag, logs } = await connectTestEngine(TEST_SWARM_HOST, 'swarm manager');
  let changes = 0;
  const options: SwarmSchedulerOptions = {
    docker,
    logs,
    instance: `test-${tag}`,
    prefix: `t${tag}`,
    startTimeoutMs: 30_000,
    updateTimeoutMs: 90_000,
    settleMs: 500,
    stopTimeoutMs: 2000,
    drainMs: 2000,
    // A health check is given as long as its interval (at least a second): on a busy machine a check takes over a second.
    healthIntervalMs: 2000,
    monitorMs: 1000,
    restartDelayMs: 500,
    pollMs: 500,
    pidsLimit: 64,
    network: TEST_SWARM_NETWORK,
    // The swarm's registry is on a private network: the operator's allow-list names it.
    registryAllow: TEST_SWARM_REGISTRY === null ? [] : [TEST_SWARM_REGISTRY],
    onEndpointsChanged: () => {
      changes++;
    },
    ...overrides,
  };
  const made: SwarmScheduler[] = [];
  const make = (): SwarmScheduler => {
    const scheduler = new SwarmScheduler(options);
    made.push(scheduler);
    return scheduler;
  };
  return {
    docker,
    logs,
    scheduler: make(),
    options,
    again: make,
    lines: (app) => logLines(logs, app),
    changes: () => changes,
    async cleanUp() {
      await Promise.all(made.map((s) => s.shutdown()));
      const services = await docker.listServices({ filters: { label: [`${LABELS.instance}=${options.instance ?? ''}`] } });
      await Promise.all(services.map((s) => docker.getService(s.ID as string).remove().catch(() => undefined)));
    },
  };
}

/** What steady traffic saw: answers by body, and the requests that failed with why. */
export interface TrafficReport {
  ok: number;
  failed: number;
  failures: string[];
  bodies: Map<string, number>;
  /** The body of the last answers. */
  last: string[];
}

/**
 * Steady GET traffic to the endpoints a scheduler reports at each moment, sent as the router
 * does: round-robin, and to the next endpoint when a connection is refused (nothing was sent);
 * any other error, or an answer other than 200, counts as a failed request.
 */
export function steadyTraffic(endpoints: () => Array<{ host: string; port: number }>, workers = 3, path = '/'): { stop(): Promise<TrafficReport> } {
  const report: TrafficReport = { ok: 0, failed: 0, failures: [], bodies: new Map(), last: [] };
  let running = true;
  const stop = async (): Promise<TrafficReport> => {
    running = false;
    active.delete(stop);
    await Promise.all(loops);
    return report;
  };
  active.add(stop);
  let turn = 0;
  const once = async (): Promise<void> => {
    const targets = endpoints();
    if (targets.length === 0) throw new Error('no endpoint');
    const start = turn++;
    for (let i = 0; i < targets.length; i++) {
      const target = targets[(start + i) % targets.length] as { host: string; port: number };
      const outcome = await get(target.host, target.port, path);
      if (outcome.kind === 'refused') continue;
      if (outcome.kind === 'error') throw new Error(`${target.host}:${target.port}: ${outcome.reason}`);
      if (outcome.status !== 200) throw new Error(`${target.host}:${target.port}: status ${outcome.status}`);
      report.bodies.set(outcome.body, (report.bodies.get(outcome.body) ?? 0) + 1);
      report.last.push(outcome.body);
      if (report.last.length > 10) report.last.shift();
      return;
    }
    throw new Error(`every endpoint refused: ${targets.map((t) => `${t.host}:${t.port}`).join(' ')}`);
  };
  const loop = async (): Promise<void> => {
    while (running) {
      try {
        await once();
        report.ok++;
      } catch (error) {
        report.failed++;
        if (report.failures.length < 20) report.failures.push(error instanceof Error ? error.message : String(error));
      }
      await new Promise((done) => setTimeout(done, 10));
    }
  };
  const loops = Array.from({ length: workers }, () => loop());
  return { stop };
}

const active = new Set<() => Promise<TrafficReport>>();

/** Stops the traffic a failed test left running (call it after each test). */
export async function stopTraffic(): Promise<void> {
  await Promise.all([...active].map((stop) => stop()));
}

type Outcome = { kind: 'refused' } | { kind: 'error'; reason: string } | { kind: 'answer'; status: number; body: string };

function get(host: string, port: number, path: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let connected = false;
    const req = request({ host, port, path, method: 'GET', agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.once('end', () => resolve({ kind: 'answer', status: res.statusCode ?? 0, body: body.trim() }));
      res.once('error', (error) => resolve({ kind: 'error', reason: error.message }));
    });
    req.once('socket', (socket) => socket.once('connect', () => (connected = true)));
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', (error: NodeJS.ErrnoException) => resolve(connected ? { kind: 'error', reason: `${error.code ?? ''} ${error.message}` } : { kind: 'refused' }));
    req.end();
  });
}
