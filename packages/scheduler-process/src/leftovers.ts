import { SCHEDULER_LOG_SOURCE } from '@svc/core';
import type { Readable } from 'node:stream';
import { importKeptOutput, keepOutput } from './output-keeper';
import { groupMembers, readStat } from './proc';
import { signalGroup, waitForGroupGone, type ProcessGroup } from './process-group';
import type { ProcessRecord, ProcessRecords } from './records';

/**
 * Records a running process group (its leader's pid and start time) so that a later
 * controller process can stop it if this one dies first.
 */
export async function recordGroup(records: ProcessRecords, canMeasure: boolean, id: string, app: string, name: string, group: ProcessGroup): Promise<void> {
  const startTime = canMeasure ? ((await readStat(group.pid))?.startTime ?? null) : null;
  try {
    records.write({ id, app, name, pid: group.pid, startTime });
  } catch {
    // Without the record only the clean-up after a controller crash is lost, not the process.
  }
}

/** Whether the recorded group still runs: its leader, the very same process, or members of its group. */
export async function isLeftover(record: ProcessRecord, canMeasure: boolean): Promise<boolean> {
  if (!canMeasure) return false;
  const leader = await readStat(record.pid);
  if (leader !== null) return record.startTime !== null && leader.startTime === record.startTime && leader.pgid === record.pid;
  // The leader is gone but members of its group may remain; a group id is never reused while the group exists.
  return ((await groupMembers(new Set([record.pid]))).get(record.pid)?.length ?? 0) > 0;
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
        signalGroup(record.pid, 'SIGTERM');
        if (!(await waitForGroupGone(record.pid, options.stopTimeoutMs))) {
          signalGroup(record.pid, 'SIGKILL');
          await waitForGroupGone(record.pid, 2000);
        }
        stopped++;
        options.onStopped(record);
      }
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
}

/**
 * The process groups an earlier controller process left running, as recorded under the data
 * directory: stopped at start-up (`reap`), or, when the router outlives the controller and
 * still sends them requests, held (`hold`) until their replacements serve, then stopped (`stop`).
 */
export class LeftoverGroups {
  constructor(
    private readonly records: ProcessRecords,
    private readonly options: { canMeasure: boolean; stopTimeoutMs: number; outputDirectory: string },
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
        // It ended while no controller process watched it: what it printed until then goes to the log.
        this.importOutput(record);
        continue;
      }
      const heldRecord = record.id.startsWith(HELD_PREFIX) ? record : { ...record, id: `${HELD_PREFIX}${record.id}` };
      if (heldRecord !== record) {
        this.records.write(heldRecord);
        this.records.remove(record.id);
      }
      held.push(heldRecord);
    }
    return held;
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
    return stopped;
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
