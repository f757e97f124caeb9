// The order jest hands test files to its workers: the longest first, so that no long file
// starts last and keeps one worker busy while the other has nothing left (jest.config.ts).
//
// Jest's own sequencer orders by the times it recorded in its cache, and by file size where it
// has none. A fresh checkout (CI clones one) has none, and size says little here: a short file
// that builds images or drives a swarm takes minutes. So a file's time is, in this order of
// preference: jest's record of its last run, the seconds below, or a guess from its kind (an
// end-to-end or integration file of its size takes longer than a unit file of that size).
//
// The seconds are what `.ci/run` measured on a two-core machine (its list of the slowest test
// files at the end of each run); refresh them when that list changes much. Only the order
// depends on them.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import Sequencer from '@jest/test-sequencer';

const BaseSequencer = Sequencer.default ?? Sequencer;

/** Seconds each of the slowest test files took in a full `.ci/run` (two cores, two workers, 7 December 2026). */
const MEASURED = {
  'packages/scheduler-docker/test/source-compiler.int.spec.ts': 210,
  'packages/scheduler-docker/test/swarm-scheduler-contract.int.spec.ts': 208,
  'packages/server/test/readme.e2e.spec.ts': 185,
  'packages/server/test/buildpacks.e2e.spec.ts': 240,
  'packages/server/test/acme-fairness.e2e.spec.ts': 107,
  'packages/server/test/compose.int.spec.ts': 99,
  'packages/scheduler-docker/test/swarm-scheduler.int.spec.ts': 95,
  'packages/server/test/authorization-matrix.e2e.spec.ts': 88,
  'packages/cli/test/cli.e2e.spec.ts': 85,
  'packages/server/test/swarm.e2e.spec.ts': 81,
  'packages/server/test/webhook-fairness.e2e.spec.ts': 77,
  'packages/scheduler-docker/test/scheduler-contract.int.spec.ts': 73,
  'packages/server/test/build-slots-multiprocess.int.spec.ts': 70,
  'packages/scheduler-docker/test/git-push-images.e2e.spec.ts': 64,
  'packages/buildpacks-git/test/node-buildpack.int.spec.ts': 63,
  'packages/server/test/embed-packages.int.spec.ts': 57,
  'packages/scheduler-docker/test/hostile-builds.int.spec.ts': 57,
  'packages/server/test/swarm-lost-worker.e2e.spec.ts': 53,
  'packages/server/test/sandbox.e2e.spec.ts': 48,
  'packages/scheduler-process/test/source-compiler.int.spec.ts': 46,
  'packages/server/test/swarm-registry.e2e.spec.ts': 44,
  'packages/dashboard/test/dashboard.e2e.spec.ts': 42,
  'packages/server/test/docker.e2e.spec.ts': 40,
  'packages/server/test/controller-restart.e2e.spec.ts': 40,
  'packages/scheduler-docker/test/docker-scheduler.int.spec.ts': 40,
  'packages/server/test/crash/crash.int.spec.ts': 38,
  'packages/scheduler-process/test/scheduler-contract.int.spec.ts': 38,
  'packages/scheduler-process/test/sandbox-limits.int.spec.ts': 37,
  'packages/scheduler-docker/test/build-network.int.spec.ts': 37,
  'packages/scheduler-docker/test/image-builder.int.spec.ts': 32,
  'packages/scheduler-process/test/sandbox.int.spec.ts': 31,
  'packages/scheduler-docker/test/docker-isolation.int.spec.ts': 31,
  'packages/builder-git/test/git-push.int.spec.ts': 30,
  'packages/builder-git/test/git-server.int.spec.ts': 30,
  'packages/scheduler-docker/test/swarm-isolation.int.spec.ts': 30,
  'packages/server/test/protocol.e2e.spec.ts': 29,
  'packages/core/test/public-api.int.spec.ts': 29,
  'packages/server/test/acme.e2e.spec.ts': 28,
  'packages/server/test/chaos.e2e.spec.ts': 27,
  'packages/scheduler-process/test/process-scheduler.int.spec.ts': 27,
  'packages/server/test/robustness.e2e.spec.ts': 26,
  'packages/persistence-typeorm/test/postgres.int.spec.ts': 26,
  'packages/scheduler-docker/test/network-guards.int.spec.ts': 26,
  'packages/router-http/test/cluster.int.spec.ts': 24,
  'packages/server/test/tenants.e2e.spec.ts': 23,
  'packages/server/test/data-dir-lock.int.spec.ts': 23,
  'packages/server/test/events-multiprocess.int.spec.ts': 22,
  'packages/server/test/events.e2e.spec.ts': 22,
};

/** Seconds per kilobyte of a file with no record, by its kind (`*.e2e.spec.ts`, `*.int.spec.ts`, others). */
const PER_KB = { e2e: 2, int: 1.5, unit: 0.2 };

/** The swarm lock a file holds (support/swarm.ts, `holdSwarm`) on the shared swarm, if any. */
function swarmLock(path) {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  if (text.includes("holdSwarm('exclusive');")) return 'exclusive';
  if (text.includes("holdSwarm('shared');")) return 'shared';
  return null;
}

const conflict = (a, b) => a !== null && b !== null && (a === 'exclusive' || b === 'exclusive');

export default class LongestFirst extends BaseSequencer {
  constructor(options) {
    super(options);
    this.workers = Math.max(1, options?.globalConfig?.maxWorkers ?? 1);
  }

  sort(tests) {
    const seconds = (test) => {
      const recorded = this.time(test);
      if (recorded !== undefined && recorded !== null) return recorded / 1000;
      const known = MEASURED[relative(test.context.config.rootDir, test.path)];
      if (known !== undefined) return known;
      const kind = test.path.endsWith('.e2e.spec.ts') ? 'e2e' : test.path.endsWith('.int.spec.ts') ? 'int' : 'unit';
      return ((test.context.hasteFS.getSize(test.path) ?? 0) / 1024) * PER_KB[kind];
    };
    const timed = tests.map((test) => ({ test, failed: this.hasFailed(test), seconds: seconds(test), lock: swarmLock(test.path) }));
    // As jest does: what failed last time first, for a quick answer; then the longest first.
    timed.sort((a, b) => (a.failed !== b.failed ? (a.failed ? -1 : 1) : b.seconds - a.seconds));
    return this.spread(timed).map((entry) => entry.test);
  }

  /**
   * Jest gives the next file to the first worker that is free. Played out with the expected
   * times, a file that would run beside one holding the swarm's lock in a conflicting mode (it
   * would only wait for it) gives its turn to the next file that would not; it runs later.
   */
  spread(timed) {
    if (this.workers < 2) return timed;
    const free = new Array(this.workers).fill(0);
    const running = [];
    const order = [];
    const pending = [...timed];
    while (pending.length > 0) {
      const worker = free.indexOf(Math.min(...free));
      const now = free[worker];
      const clashes = (entry) => running.filter((r) => r.end > now && conflict(r.lock, entry.lock));
      const index = pending.findIndex((entry) => clashes(entry).length === 0);
      const [entry] = pending.splice(index === -1 ? 0 : index, 1);
      // A file that cannot avoid a clash starts once the holder is done.
      const start = Math.max(now, ...clashes(entry).map((r) => r.end));
      running.push({ lock: entry.lock, end: start + entry.seconds });
      free[worker] = start + entry.seconds;
      order.push(entry);
    }
    return order;
  }
}
