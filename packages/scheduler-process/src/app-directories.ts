import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

const APP_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * The working directories of processes: the build's, or, for apps without files (an image
 * build's Procfile-less run), a directory of the app's own under `appsDir`, created empty
 * when the app has no process yet and removed when the last one is gone.
 */
export class AppDirectories {
  /** @param users how many containers and one-off commands of the app (not yet forgotten) use its own directory. */
  constructor(
    private readonly appsDir: string,
    private readonly users: (app: string) => number,
  ) {}

  /** The working directory: the build's, which must exist, or the app's own. @throws Error when neither can be used. */
  async workdir(app: string, given: string | null): Promise<string> {
    if (given !== null) {
      const info = await stat(given).catch(() => null);
      if (!info?.isDirectory()) throw new Error(`the build's working directory ${given} does not exist`);
      return given;
    }
    if (!APP_ID.test(app)) throw new Error(`unusable app id "${app}"`);
    const dir = join(this.appsDir, app);
    // Only the caller uses it: whatever an earlier process left there goes.
    if (this.users(app) <= 1) await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** Removes the app's own directory when nothing uses it any more. */
  async removeIfUnused(app: string): Promise<void> {
    if (!APP_ID.test(app) || this.users(app) > 0) return;
    await rm(join(this.appsDir, app), { recursive: true, force: true }).catch(() => undefined);
  }
}
