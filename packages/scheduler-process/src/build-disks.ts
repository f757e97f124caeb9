import { boundedDiskBytes, buildOverCacheLimit, buildOverImageLimit } from '@svc/core';
import { BoundedDisk, canBoundDisks, copyContents, emptyDirectory } from './bounded-disk';
import { treeBytes } from './build-cache';

/** The two limits on what a build writes, in bytes. */
export interface BuildDiskLimits {
  /** `BUILD_IMAGE_LIMIT_MB`: the most the compiled app directory (the slug) may take. */
  imageBytes: number;
  /** `BUILD_CACHE_LIMIT_MB`: the most the build cache may take; 0 keeps none. */
  cacheBytes: number;
}

/**
 * Where one build writes: its app directory (BUILD_DIR) and its cache (CACHE_DIR), each on a
 * loop-mounted file system of the limit's size (plus a margin) made for the build, so that a
 * write past it fails while the build runs (ENOSPC) and the build never takes more of this
 * machine's disk than its limits. The checkout and the app's kept cache are copied in at the
 * start; only a build within both limits is copied back at the end (the checkout's directory
 * then holds the compiled app, the kept cache this build's). Without the sandbox (a single
 * trusted developer) or where no file system can be mounted (not root), the steps write in the checkout and the kept cache
 * themselves, measured after each step.
 */
export class BuildDisks {
  private constructor(
    private readonly limits: BuildDiskLimits,
    private readonly checkout: string,
    private readonly keptCache: string,
    private readonly app: BoundedDisk | null,
    private readonly cache: BoundedDisk | null,
    private readonly home: BoundedDisk | null,
    private readonly hostHome: string,
  ) {}

  /**
   * Makes the build's file systems under `tmp` (the build's own directory, removed after it).
   * @throws Error when a file system cannot be made or filled.
   */
  static async open(tmp: string, checkout: string, keptCache: string, home: string, limits: BuildDiskLimits, sandboxed: boolean): Promise<BuildDisks> {
    if (!sandboxed || !canBoundDisks()) return new BuildDisks(limits, checkout, keptCache, null, null, null, home);
    const made: BoundedDisk[] = [];
    try {
      const app = await BoundedDisk.make(tmp, 'app', boundedDiskBytes(limits.imageBytes));
      made.push(app);
      await app.ownLike(checkout);
      await copyContents(checkout, app.path);
      const cache = await BoundedDisk.make(tmp, 'cache', boundedDiskBytes(limits.cacheBytes));
      made.push(cache);
      await cache.ownLike(keptCache);
      if (limits.cacheBytes > 0) {
        // A kept cache larger than the file system (the limit was lowered since) is dropped.
        await copyContents(keptCache, cache.path).catch(async () => {
          await emptyDirectory(cache.path);
          await emptyDirectory(keptCache);
        });
      }
      // HOME is the steps' scratch (npm's cache): never kept, bounded as the app directory is.
      const scratch = await BoundedDisk.make(tmp, 'home-disk', boundedDiskBytes(limits.imageBytes));
      made.push(scratch);
      await scratch.ownLike(home);
      return new BuildDisks(limits, checkout, keptCache, app, cache, scratch, home);
    } catch (error) {
      for (const disk of made) await disk.remove().catch(() => undefined);
      throw error;
    }
  }

  /** The host directory the steps see as BUILD_DIR. */
  get appPath(): string {
    return this.app?.path ?? this.checkout;
  }

  /** The host directory the steps see as HOME. */
  get homePath(): string {
    return this.home?.path ?? this.hostHome;
  }

  /** The host directory the steps see as CACHE_DIR. */
  get cachePath(): string {
    return this.cache?.path ?? this.keptCache;
  }

  /**
   * Why the build cannot be kept: the sentence of the first limit it is over, or null. Without
   * a file system of its own, a cache over its limit is emptied here (it was written in place).
   */
  async overLimit(): Promise<string | null> {
    const cacheUsed = this.cache === null ? await treeBytes(this.keptCache) : await this.cache.used();
    // With no cache kept, what a step writes there (up to the margin) goes with the build.
    if (this.limits.cacheBytes > 0 && cacheUsed > this.limits.cacheBytes) {
      if (this.cache === null) await emptyDirectory(this.keptCache);
      return buildOverCacheLimit(cacheUsed, this.limits.cacheBytes, this.cache === null ? 'emptied' : 'stays');
    }
    const appUsed = this.app === null ? await treeBytes(this.checkout) : await this.app.used();
    if (appUsed > this.limits.imageBytes) return buildOverImageLimit(appUsed, this.limits.imageBytes);
    return null;
  }

  /**
   * Keeps what the build made: its app directory in the checkout's place, its cache as the
   * app's kept one (none with a limit of 0). Call it once the steps are over and within limits.
   */
  async keep(): Promise<void> {
    if (this.app !== null) {
      await emptyDirectory(this.checkout);
      await copyContents(this.app.path, this.checkout);
    }
    if (this.cache !== null) {
      await emptyDirectory(this.keptCache);
      if (this.limits.cacheBytes > 0) await copyContents(this.cache.path, this.keptCache);
    } else if (this.limits.cacheBytes === 0) {
      await emptyDirectory(this.keptCache);
    }
  }

  /** Unmounts and removes the build's file systems (their contents go with them). */
  async remove(): Promise<void> {
    await this.app?.remove();
    await this.cache?.remove();
    await this.home?.remove();
  }
}
