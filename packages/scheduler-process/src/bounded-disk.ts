import { execFile } from 'node:child_process';
import { chmod, chown, lstat, mkdir, open, readdir, readFile, rm, rmdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';

const PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** Runs a tool of this machine's; rejects with its stderr when it fails. */
function tool(file: string, args: string[], timeoutMs = 120_000): Promise<void> {
  return new Promise((done, fail) => {
    execFile(file, args, { timeout: timeoutMs, env: { PATH } }, (error, _stdout, stderr) => {
      if (error === null) done();
      else fail(new Error(`${file} ${args[0] ?? ''}: ${stderr.trim() || error.message}`));
    });
  });
}

/** Whether this process may make loop-mounted file systems (it runs as root). */
export function canBoundDisks(): boolean {
  return process.getuid?.() === 0;
}

/**
 * A file system of a fixed size on a sparse image file, loop-mounted: what is written in it
 * past its size fails with ENOSPC, so a build's writes are bounded while it runs, and the
 * image file never takes more of this machine's disk than that size.
 */
export class BoundedDisk {
  private constructor(
    private readonly image: string,
    /** Where the file system is mounted. */
    readonly path: string,
    private readonly baseline: number,
  ) {}

  /**
   * Makes the image file `<dir>/<name>.img` of `bytes`, an ext4 file system on it (no journal,
   * no reserved blocks), and mounts it on `<dir>/<name>` (nosuid, nodev), empty.
   * @throws Error when a tool fails (no root, no loop device).
   */
  static async make(dir: string, name: string, bytes: number): Promise<BoundedDisk> {
    const image = join(dir, `${name}.img`);
    const path = join(dir, name);
    const file = await open(image, 'wx', 0o600);
    try {
      await file.truncate(bytes);
    } finally {
      await file.close();
    }
    try {
      await mkdir(path, { mode: 0o700 });
      // The inode tables are never zeroed (a new sparse file reads as zeros): a large limit costs no writes.
      await tool('mkfs.ext4', ['-q', '-F', '-m', '0', '-O', '^has_journal', '-i', '16384', '-E', 'lazy_itable_init=1,nodiscard', image]);
      await tool('mount', ['-o', 'loop,nosuid,nodev,noinit_itable', image, path]);
    } catch (error) {
      await rm(image, { force: true });
      await rmdir(path).catch(() => undefined);
      throw error;
    }
    await rmdir(join(path, 'lost+found')).catch(() => undefined);
    const baseline = await usedBytes(path);
    return new BoundedDisk(image, path, baseline);
  }

  /** What was written in it since it was made, in bytes (its used blocks less those of the empty file system). */
  async used(): Promise<number> {
    return Math.max(0, (await usedBytes(this.path)) - this.baseline);
  }

  /** Gives its top directory the owner and mode of `like`. */
  async ownLike(like: string): Promise<void> {
    const info = await lstat(like);
    await chown(this.path, info.uid, info.gid);
    await chmod(this.path, info.mode & 0o7777);
  }

  /** Unmounts it and removes its image file and mount point; nothing of it is left. */
  async remove(): Promise<void> {
    try {
      await tool('umount', [this.path], 60_000);
    } catch {
      // A process still holding a file in it keeps it busy: it goes once that process is gone.
      await tool('umount', ['-l', this.path], 60_000).catch(() => undefined);
    }
    await rm(this.image, { force: true });
    await rmdir(this.path).catch(() => undefined);
  }
}

/** The bytes a mounted file system's used blocks take. */
async function usedBytes(path: string): Promise<number> {
  const info = await statfs(path);
  return (info.blocks - info.bfree) * info.bsize;
}

/** Copies the contents of `from` into `to` as they are (owners, modes, links not followed). */
export async function copyContents(from: string, to: string): Promise<void> {
  await tool('cp', ['-a', '--', `${from}/.`, `${to}/`], 30 * 60_000);
}

/** Removes everything in `dir`, keeping `dir`. */
export async function emptyDirectory(dir: string): Promise<void> {
  for (const name of await readdir(dir)) await rm(join(dir, name), { recursive: true, force: true });
}

/**
 * Unmounts every file system mounted under `dir` (deepest first), as a controller that was
 * killed during builds leaves them; resolves with how many.
 */
export async function unmountUnder(dir: string): Promise<number> {
  const mounts = (await readFile('/proc/mounts', 'utf8').catch(() => ''))
    .split('\n')
    .map((line) => (line.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((point) => point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) await tool('umount', ['-l', point], 60_000).catch(() => undefined);
  return mounts.length;
}
