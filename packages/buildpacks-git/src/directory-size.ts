import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The bytes the files under `path` take (links and directories count as their own entry),
 * counted only up to `limit`: the walk stops once the total passes it. Entries that vanish
 * during the walk (git renames as it goes) are not counted.
 */
export async function directorySize(path: string, limit = Number.POSITIVE_INFINITY): Promise<number> {
  let total = 0;
  const pending = [path];
  while (pending.length > 0 && total <= limit) {
    const current = pending.pop() as string;
    let info;
    try {
      info = await lstat(current);
    } catch {
      continue;
    }
    total += info.size;
    if (!info.isDirectory()) continue;
    try {
      for (const entry of await readdir(current)) pending.push(join(current, entry));
    } catch {
      // Gone or unreadable since lstat: nothing more to count there.
    }
  }
  return total;
}
