import { randomUUID } from 'node:crypto';
import { CappedOutput, RUN_TIMEOUT_EXIT_CODE, runTimeoutNote, withProfileScripts, type RunResult, type RunSpec } from '@svc/core';
import type { AppDirectories } from './app-directories';
import type { AppConfinement } from './confinement';
import { outOfMemory, processCgroup, removeWhenGone, type ProcessCgroup } from './container-limits';
import { recordGroup } from './leftovers';
import type { PortAllocator } from './ports';
import { drainGroup, exitCodeOf, spawnGroup, terminateGroup, type ProcessGroup } from './process-group';
import type { ProcessRecords } from './records';
import type { OneOff } from './supervised';

/** What a one-off command uses of its scheduler; `runs` holds it while it runs (shutdown stops what is there). */
export interface OneOffContext {
  directories: AppDirectories;
  confinement: AppConfinement;
  ports: PortAllocator;
  records: ProcessRecords;
  canMeasure: boolean;
  runs: Map<string, OneOff>;
}

/**
 * Runs a one-off command with the release's environment and a PORT, and waits for it.
 * Output (stdout and stderr as they arrive) is capped at the spec's limit; a command still
 * running at its timeout is killed and reported with exit code 124. Whatever happens, its
 * port, cgroup, record and (when no other process uses it) its own directory go, and the
 * app's user is swept.
 * @throws Error when the command cannot be started.
 */
export async function runOneOff(context: OneOffContext, spec: RunSpec): Promise<RunResult> {
  const { directories, confinement, ports, records, runs } = context;
  const oneOff: OneOff = { id: `run-${randomUUID()}`, app: spec.app, ownDirectory: spec.workdir === null, group: null };
  runs.set(oneOff.id, oneOff);
  let port: number | null = null;
  let cgroup: ProcessCgroup | null = null;
  let group: ProcessGroup | null = null;
  try {
    const cwd = await directories.workdir(spec.app, spec.workdir);
    const user = await confinement.users.confine(spec.app, cwd);
    port = await ports.allocate();
    const output = new CappedOutput(spec.outputLimitBytes);
    cgroup = await processCgroup(confinement.sandbox, 'run', null, null);
    const command = withProfileScripts(spec.command);
    group = await spawnGroup({
      command,
      cwd,
      env: confinement.environment(spec.env, cwd, port),
      nice: 0,
      onOutput: (chunk) => output.push(chunk),
      sandboxed: confinement.sandboxed(spec.app, user, cwd, command, 0, cgroup),
    });
    const started = group;
    oneOff.group = started;
    await recordGroup(records, context.canMeasure, oneOff.id, spec.app, 'run', started, cgroup?.cgroup ?? null);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void terminateGroup(started, 2000);
    }, spec.timeoutSeconds * 1000);
    const status = await started.exited;
    clearTimeout(timer);
    await drainGroup(started);
    const oom = await outOfMemory(cgroup);
    await cgroup?.cgroup.remove();
    const notes = timedOut ? [runTimeoutNote(spec.timeoutSeconds)] : oom !== null ? [`a process ${oom}`] : [];
    return { exitCode: timedOut ? RUN_TIMEOUT_EXIT_CODE : exitCodeOf(status), output: output.text(notes) };
  } finally {
    removeWhenGone(cgroup, group);
    if (port !== null) ports.release(port);
    records.remove(oneOff.id);
    // Out of `runs` before its directory is looked at: it no longer uses it.
    runs.delete(oneOff.id);
    if (oneOff.ownDirectory) await directories.removeIfUnused(spec.app);
    await confinement.users.sweep(spec.app);
  }
}
