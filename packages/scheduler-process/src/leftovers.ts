import { SCHEDULER_LOG_SOURCE } from '@svc/core';
import type { Readable } from 'node:stream';
import { oomKillsIn, removeCgroupDirectories, type Cgroup } from './cgroups';
import { importKeptOutput, keepOutput } from './output-keeper';
import { groupMembers, namespaceMembers, readStat } from './proc';
import { initAlive, signalGroup, waitWhileAlive, type ProcessGroup } from './process-group';
import type { ProcessRecord, ProcessRecords } from './records';

/**
 * Records a running process group (its leader's pid and start time; a sandbox's init, PID
 * namespace and cgroup) so that a later controller process can find it again: to stop it
 * if this one dies first, or to hold it until its replacement serves.
 */
export async function recordGroup(
  records: ProcessRecords,
  canMeasure: boolean,
  id: string,
  app: string,
  name: string,
  group: ProcessGroup,
  cgroup: Cgroup | null = null,
): Promise<void> {
  const startTime = canMeasure ? ((await readStat(group.pid))?.startTime ?? null) : null;
  const sandbox = group.sandbox();
  try {
    records.write({
      id,
      app,
      name,
      pid: group.pid,
      startTime,
      ...(sandbox === null ? {} : { sandbox: { init: sandbox.init, initStart: sandbox.initStart, namespace: sandbox.namespace } }),
      ...(cgroup === null ? {} : { cgroups: cgroup.directories }),
    });
  } catch {
    // Without the record only the clean-up after a controller crash is lost, not the process.
  }
}

/** Whether the recorded group's leader (bubblewrap, for a sandbox) is still the very process it was. */
async function leaderAlive(record: ProcessRecord): Promise<boolean> {
  const leader = await readStat(record.pid);
  return leader !== null && leader.state !== 'Z' && record.startTime !== null && leader.startTime === record.startTime && leader.pgid === record.pid;
}

/**
 * Whether the recorded group still runs: its leader, the very same process, or members of its
 * group; for a sandbox, its init too (a process of the sandbox may have left the process group,
 * never the PID namespace, and the init lives as long as any process of it does).
 */
export async function isLeftover(record: ProcessRecord, canMeasure: boolean): Promise<boolean> {
  if (!canMeasure) return false;
  if (record.sandbox !== undefined && (await initAlive(record.sandbox))) return true;
  const leader = await readStat(record.pid);
  if (leader !== null) return record.startTime !== null && leader.startTime === record.startTime && leader.pgid === record.pid;
  // The leader is gone but members of its group may remain; a group id is never reused while the group exists.
  return ((await groupMembers(new Set([record.pid]))).get(record.pid)?.length ?? 0) > 0;
}

/**
 * Signals a recorded group, which is not a child of this controller process. A sandbox as its
 * own controller process would (see process-group.ts's signalSandbox): SIGKILL to its init and
 * bubblewrap; another signal to every process of its namespace but the init, so that the app
 * stops gracefully. A plain group as a whole.
 */
async function signalRecorded(record: ProcessRecord, signal: NodeJS.Signals): Promise<void> {
  const sandbox = record.sandbox;
  if (sandbox === undefined) return signalGroup(record.pid, signal);
  if (signal === 'SIGKILL') {
    if (await initAlive(sandbox)) signalProcess(sandbox.init, 'SIGKILL');
    if (await leaderAlive(record)) signalGroup(record.pid, 'SIGKILL');
    return;
  }
  if (!(await initAlive(sandbox))) return;
  const members = await namespaceMembers(sandbox.namespace);
  // The namespace's number is given to a new one once it ends: only while the init lives is it this one.
  if (!(await initAlive(sandbox))) return;
  for (const member of members) if (member !== sandbox.init) signalProcess(member, signal);
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}


/**
 * Stops the groups of `leftovers` still running (SIGTERM, SIGKILL after `stopTimeoutMs`),
 * calling `onStopped` for each, and removes their records. Resolves with how many it stopped.
 */
export async function stopLeftovers(
  records: ProcessRecords,
  leftovers: ProcessRecord[],
  options: { canMeasure: boolean; stopTimeoutMs: number; onStopped: (record: ProcessRecord) => void },
): Promise<number> {
  let stopped = 0;
  await Promise.all(
    leftovers.map(async (record) => {
      if (await isLeftover(record, options.canMeasure)) {
        await signalRecorded(record, 'SIGTERM');
        if (!(await waitWhileAlive(() => isLeftover(record, true), options.stopTimeoutMs))) {
          await signalRecorded(record, 'SIGKILL');
          await waitWhileAlive(() => isLeftover(record, true), 2000);
        }
        stopped++;
        options.onStopped(record);
      }
      // Its cgroup goes with it (a busy one, of a group that would not die, stays for the next start).
      if (record.cgroups !== undefined) await removeCgroupDirectories(record.cgroups);
      // A process started since under the same id (a replacement) keeps its record.
      records.removeIf(record.id, record.pid);
    }),
  );
  return stopped;
}

/** The prefix of the records of groups held by a later controller process until their replacements serve. */
const HELD_PREFIX = 'held-';

/** What LeftoverGroups needs of its scheduler. */
export interface LeftoverHooks {
  /** Whether this controller process runs the container or command of that id itself. */
  owned: (id: string) => boolean;
  /** Writes a line to an app's log. */
  write: (app: string, source: string, line: string) => void;
  /** Resolves once the log lines so far are written. */
  flush: () => Promise<void>;
  /** Whatever still runs as the apps' users goes, unless something of the app runs (AppUsers.sweep). */
  sweep: (apps: string[]) => Promise<void>;
}

/**
 * The process groups an earlier controller process left running, as recorded under the data
 * directory: stopped at start-up (`reap`), or, when the router outlives the controller and
 * still sends them requests, held (`hold`) until their replacements serve, then stopped (`stop`).
 */
export class LeftoverGroups {
  /** The groups held until their replacements serve. */
  private held: ProcessRecord[] = [];
  private memoryTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly records: ProcessRecords,
    private readonly options: { canMeasure: boolean; stopTimeoutMs: number; outputDirectory: string; memoryPollMs: number },
    private readonly hooks: LeftoverHooks,
  ) {}

  /** Stops every recorded group this process does not run (it was left by a controller that crashed, was killed or let it run); resolves with how many ran. */
  reap(): Promise<number> {
    return this.stop(this.records.list().filter((record) => !this.hooks.owned(record.id)));
  }

  /**
   * The recorded groups that still run, kept running: each is recorded again under an id of
   * its own (`held-<id>`), so that the replacement started under the container's id does not
   * take its record, and a controller process that dies before stopping them leaves them
   * recorded for the next. Groups no longer running lose their records.
   */
  async hold(): Promise<ProcessRecord[]> {
    const held: ProcessRecord[] = [];
    for (const record of this.records.list()) {
      if (this.hooks.owned(record.id)) continue;
      if (!(await isLeftover(record, this.options.canMeasure))) {
        this.records.remove(record.id);
        // It ended while no controller process watched it: what it printed until then goes to the log, its cgroup goes.
        this.importOutput(record);
        if (record.cgroups !== undefined) await removeCgroupDirectories(record.cgroups);
        continue;
      }
      const heldRecord = record.id.startsWith(HELD_PREFIX) ? record : { ...record, id: `${HELD_PREFIX}${record.id}` };
      if (heldRecord !== record) {
        this.records.write(heldRecord);
        this.records.remove(record.id);
      }
      held.push(heldRecord);
    }
    this.held = held;
    this.watchMemory();
    return held;
  }

  /** The apps of the held groups: their users stay theirs (no other app is given one, nothing of them is swept). */
  heldApps(): Set<string> {
    return new Set(this.held.map((record) => record.app));
  }

  /**
   * While groups are held, their cgroups are watched as their own controller process watched
   * them: a process killed there for want of memory takes the rest of its group with it (cgroup
   * v1 has no `memory.oom.group`), as it would have before the restart.
   */
  private watchMemory(): void {
    if (this.memoryTimer !== null || !this.held.some((record) => record.cgroups !== undefined)) return;
    let measuring = false;
    this.memoryTimer = setInterval(() => {
      if (measuring) return;
      measuring = true;
      void (async () => {
        for (const record of this.held) {
          if (record.cgroups === undefined || (await oomKillsIn(record.cgroups)) === 0 || !this.held.includes(record)) continue;
          this.hooks.write(record.app, SCHEDULER_LOG_SOURCE, `${record.name}: a process of it was killed for using more than its memory limit (out of memory): killing the rest of process group ${record.pid}, left running by an earlier controller process`);
          await signalRecorded(record, 'SIGKILL');
        }
      })().finally(() => (measuring = false));
    }, this.options.memoryPollMs);
    this.memoryTimer.unref();
  }

  /**
   * Stops the given recorded groups (SIGTERM, SIGKILL after the stop timeout) and resolves with
   * how many still ran; what they printed since their controller process left is read into the app's log.
   */
  async stop(leftovers: ProcessRecord[]): Promise<number> {
    const stopped = await stopLeftovers(this.records, leftovers, {
      canMeasure: this.options.canMeasure,
      stopTimeoutMs: this.options.stopTimeoutMs,
      onStopped: (record) => this.hooks.write(record.app, SCHEDULER_LOG_SOURCE, `${record.name}: stopped process group ${record.pid}, left running by an earlier controller process`),
    });
    // The keeper writes the last lines once the group is gone and the pipes close.
    if (leftovers.length > 0) await new Promise((resolve) => setTimeout(resolve, 200));
    for (const record of leftovers) this.importOutput(record);
    await this.hooks.flush();
    this.held = this.held.filter((record) => !leftovers.includes(record));
    if (this.held.length === 0) this.stopWatching();
    // Their users may be given to other apps now, once nothing of theirs is left.
    await this.hooks.sweep([...new Set(leftovers.map((record) => record.app))]);
    return stopped;
  }

  /** Stops watching the held groups' memory (at shutdown and detach: they are the next controller process's to watch). */
  stopWatching(): void {
    if (this.memoryTimer !== null) clearInterval(this.memoryTimer);
    this.memoryTimer = null;
  }

  /** Writes what the keeper kept of a recorded group's output to its app's log, named as the scheduler names a process's lines (the core's outputSource). */
  private importOutput(record: ProcessRecord): void {
    const id = record.id.startsWith(HELD_PREFIX) ? record.id.slice(HELD_PREFIX.length) : record.id;
    importKeptOutput(this.options.outputDirectory, id, (line) => this.hooks.write(record.app, `${record.app}[${record.name}]`, line));
  }

  /** Hands the output pipes of processes left running for the next controller process to a keeper (output-keeper.ts). */
  keepOutput(groups: Array<{ id: string; pipes: readonly Readable[] }>): void {
    keepOutput(this.options.outputDirectory, groups);
  }
}
