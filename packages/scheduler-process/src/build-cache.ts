import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { giveTree } from './sandbox';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The bytes a directory tree takes, measured from outside any sandbox: the allocated blocks of
 * every file, directory and symbolic link (links are never followed), so sparse files count
 * what they hold and small files their blocks.
 */
export async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path).catch(() => null);
    if (info === null) return;
    total += Math.max(info.blocks * 512, 0);
    if (!info.isDirectory()) return;
    for (const name of await readdir(path).catch(() => [] as string[])) await walk(join(path, name));
  };
  await walk(dir);
  return total;
}

/**
 * The build caches of apps: `<root>/<app uuid>`, one directory per app, mode 0700 and owned by
 * the app's user, under a root only the controller can enter.
 */
export class BuildCaches {
  constructor(private readonly root: string) {}

  /** The app's cache directory. @throws Error for a uuid that is not one. */
  directory(appUuid: string): string {
    if (!UUID.test(appUuid)) throw new Error(`unusable app uuid "${appUuid}"`);
    return join(this.root, appUuid.toLowerCase());
  }

  /** The app's cache, created when missing and given to `uid` (null: the controller's user, unconfined). */
  async open(appUuid: string, uid: number | null): Promise<string> {
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    const dir = this.directory(appUuid);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (uid !== null) await giveTree(dir, uid);
    return dir;
  }

  /** Removes the app's cache; a missing one is fine. */
  async remove(appUuid: string): Promise<void> {
    await rm(this.directory(appUuid), { recursive: true, force: true });
  }
}
