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
      records.remove(record.id);
    }),
  );
  return stopped;
}
