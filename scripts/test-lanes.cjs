// How test files share the machine's cores (jest.config.ts, scripts/test-environment.cjs,
// scripts/test-sequencer.mjs).
//
// Most test files keep a core busy: controllers, builds, containers, databases. A few mostly
// wait: those driving a Docker Swarm spend their time waiting for the swarm to converge, for
// health checks and for drains. Jest runs one more worker than there are CPU slots; a busy file
// holds one of the slots while it runs (from its environment's set-up to its tear-down), and
// a waiting file needs none. So the waiting files run beside as many busy files as there are
// cores, and never more busy files than that.
//
// A slot is a file `slot-<n>` made with O_EXCL in a directory under the system's temporary
// directory, holding the process id of the jest worker and the test file; a slot whose process
// is gone is taken back by the next one to look. The directory is the machine's: two `npm test`
// runs at once share the cores too.
'use strict';
const { availableParallelism, tmpdir } = require('node:os');
const { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } = require('node:fs');
const { join } = require('node:path');

const SLOTS_DIR = join(tmpdir(), 'svc-test-cpu-slots');
const POLL_MS = 200;

/** A whole number from `min` to `max` in `setting`, else `fallback`. */
function setting(value, fallback, min, max) {
  const wanted = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(wanted) && wanted >= min && wanted <= max ? wanted : fallback;
}

/** TEST_CPU_SLOTS (1 to 8), else the cores, two to four: how many busy files run at once. */
function cpuSlots(env = process.env) {
  return setting(env.TEST_CPU_SLOTS, Math.min(4, Math.max(2, availableParallelism())), 1, 8);
}

/** TEST_WORKERS (1 to 9), else one more than the CPU slots: the last worker runs the waiting files. */
function testWorkers(env = process.env) {
  return setting(env.TEST_WORKERS, cpuSlots(env) + 1, 1, 9);
}

/**
 * How a test file uses a Docker Swarm, read from its text: the lock it holds on the shared swarm
 * (`holdSwarm('exclusive')` or `holdSwarm('shared')`, support/swarm.ts), and whether it drives
 * a swarm at all (that one or another, `holdSwarm(mode, host)`), so that it mostly waits.
 */
function swarmUse(path) {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { sharedSwarm: null, drivesSwarm: false };
  }
  const sharedSwarm = text.includes("holdSwarm('exclusive');") ? 'exclusive' : text.includes("holdSwarm('shared');") ? 'shared' : null;
  return { sharedSwarm, drivesSwarm: /\bholdSwarm\('(shared|exclusive)'[,)]/.test(text) };
}

/** Whether a test file mostly waits: it drives a Docker Swarm. */
function waitsMostly(path) {
  return swarmUse(path).drivesSwarm;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Takes slot `n` when it is free or its holder is gone; true when taken. */
function tryTake(dir, n, holder) {
  const file = join(dir, `slot-${n}`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, JSON.stringify(holder));
      } finally {
        closeSync(fd);
      }
      return true;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    let pid = 0;
    try {
      pid = JSON.parse(readFileSync(file, 'utf8')).pid;
    } catch {
      // Being written this instant (or unreadable): treated as held.
      return false;
    }
    if (alive(pid)) return false;
    try {
      unlinkSync(file);
    } catch {
      // Another one took it back first.
    }
  }
  return false;
}

/**
 * Waits for one of `slots` CPU slots in `dir` for `what` (a test file) and resolves with the
 * function that gives it back. A process holds one slot at a time (a jest worker runs one file
 * at a time).
 */
async function takeCpuSlot(what, slots = cpuSlots(), dir = SLOTS_DIR) {
  mkdirSync(dir, { recursive: true, mode: 0o1777 });
  const holder = { pid: process.pid, what };
  for (;;) {
    for (let n = 0; n < slots; n++) {
      if (tryTake(dir, n, holder)) {
        const file = join(dir, `slot-${n}`);
        return () => {
          try {
            const now = JSON.parse(readFileSync(file, 'utf8'));
            if (now.pid === holder.pid && now.what === holder.what) unlinkSync(file);
          } catch {
            // Already taken back.
          }
        };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

module.exports = { cpuSlots, testWorkers, swarmUse, waitsMostly, takeCpuSlot, SLOTS_DIR };
