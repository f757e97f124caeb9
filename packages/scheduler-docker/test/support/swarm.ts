/// <reference types="jest" />
import type Docker from 'dockerode';
import type { LogEntry } from '@svc/core';
import { InMemoryLogStore } from '@svc/core/testing';
import { LABELS, SwarmScheduler, createEngine, pingEngine, type SwarmSchedulerOptions } from '../../src';

const env = (name: string): string | null => (process.env[name]?.trim() ? (process.env[name] as string).trim() : null);

/** A manager of the test swarm (`TEST_SWARM_HOST`, a DOCKER_HOST value), or null when the Swarm tests are not to run. */
export const TEST_SWARM_HOST = env('TEST_SWARM_HOST');
/** The engine of the swarm's worker (`TEST_SWARM_WORKER_HOST`), or null for a swarm of one node. */
export const TEST_SWARM_WORKER_HOST = env('TEST_SWARM_WORKER_HOST');
/** The registry every node pulls the test images from (`TEST_SWARM_REGISTRY`, host:port), or null: images are the nodes' own. */
export const TEST_SWARM_REGISTRY = env('TEST_SWARM_REGISTRY');

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

/** Like {@link describeWithSwarm}, for tests that need a second node (TEST_SWARM_WORKER_HOST). */
export function describeWithTwoNodes(title: string, body: () => void): void {
  describeNeeding('TEST_SWARM_WORKER_HOST', TEST_SWARM_HOST === null ? null : TEST_SWARM_WORKER_HOST, 'a swarm of two nodes', title, body);
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

let counter = 0;

/** Makes a Swarm scheduler with short health checks, monitor periods and drains (quick tests). */
export async function testSwarm(overrides: Partial<SwarmSchedulerOptions> = {}): Promise<TestSwarm> {
  const docker = createEngine(TEST_SWARM_HOST);
  const reason = await pingEngine(docker, 5000);
  if (reason !== null) throw new Error(`the swarm manager at ${TEST_SWARM_HOST ?? ''} does not answer: ${reason}`);
  counter++;
  const tag = `${process.pid.toString(36)}${counter}`;
  const logs = new InMemoryLogStore();
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
    healthIntervalMs: 1000,
    monitorMs: 1000,
    restartDelayMs: 500,
    pollMs: 500,
    pidsLimit: 64,
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
    lines: async (app) => (await logs.tail(app, 10_000)).map((e: LogEntry) => `${e.source}: ${e.message}`),
    changes: () => changes,
    async cleanUp() {
      await Promise.all(made.map((s) => s.shutdown()));
      const services = await docker.listServices({ filters: { label: [`${LABELS.instance}=${options.instance ?? ''}`] } });
      await Promise.all(services.map((s) => docker.getService(s.ID as string).remove().catch(() => undefined)));
    },
  };
}
