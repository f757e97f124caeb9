import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What is kept on disk about a running process group, to find it again after a crash. */
export interface ProcessRecord {
  /** The container's id, or `run-<n>` for a one-off command. */
  id: string;
  app: string;
  /** `web.1`, `run`. */
  name: string;
  /** The group leader's pid, which is also the group id. */
  pid: number;
  /** The leader's start time from /proc, when known: tells it apart from a later process with the same pid. */
  startTime: string | null;
  /**
   * A sandboxed group's init and PID namespace (every process of the group is in it, whatever
   * its process group); absent for a plain process group.
   */
  sandbox?: { init: number; initStart: string | null; namespace: string };
  /** The directories of the group's cgroup (one per hierarchy), to watch and remove; absent without one. */
  cgroups?: string[];
}

/**
 * One small file per running process group in a directory: written when a group starts,
 * removed when it is stopped. What is left after a crash of the controller names the groups
 * it left running.
 */
export class ProcessRecords {
  constructor(private readonly directory: string) {}

  private file(id: string): string {
    return join(this.directory, `${id.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
  }

  write(record: ProcessRecord): void {
    mkdirSync(this.directory, { recursive: true });
    writeFileSync(this.file(record.id), JSON.stringify(record));
  }

  remove(id: string): void {
    rmSync(this.file(id), { force: true });
  }

  /** Removes the record of `id` only while it still names the group of `pid` (a newer process may have taken the id). */
  removeIf(id: string, pid: number): void {
    try {
      const record = JSON.parse(readFileSync(this.file(id), 'utf8')) as ProcessRecord;
      if (record.pid !== pid) return;
    } catch {
      // Unreadable or gone: nothing else can be in it.
    }
    this.remove(id);
  }

  /** Every readable record; unreadable files are removed. */
  list(): ProcessRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.directory).filter((name) => name.endsWith('.json'));
    } catch {
      return [];
    }
    const records: ProcessRecord[] = [];
    for (const name of names) {
      const path = join(this.directory, name);
      try {
        const record = JSON.parse(readFileSync(path, 'utf8')) as ProcessRecord;
        if (typeof record.id === 'string' && Number.isInteger(record.pid) && record.pid > 1) records.push(record);
        else rmSync(path, { force: true });
      } catch {
        rmSync(path, { force: true });
      }
    }
    return records;
  }
}
