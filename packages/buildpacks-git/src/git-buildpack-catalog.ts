import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { RequestRejected, type BuildpackCatalog, type InstalledBuildpack } from '@svc/core';
import { BUILTIN_BUILDPACKS, isBuildpackDirectory, isBuildpackName, listBuildpackNames } from './buildpack-directory';
import { BUILDPACK_FETCH, fetchKey, fetchedName, isFetchableRef, isFetchableUrl, redactUrl } from './fetch-rules';
import { FetchFailure, fetchIntoDirectory } from './git-fetch';

/** What each built-in buildpack's bin/detect looks for, told to a pusher whose app none detected. */
const BUILTIN_NEEDS: Record<(typeof BUILTIN_BUILDPACKS)[number], string | null> = { node: 'a package.json', python: 'a requirements.txt or a pyproject.toml', go: 'a go.mod', ruby: 'a Gemfile', static: 'an index.html at its root or in public/', plain: null };

// In the repository (and the controller's image) this package is packages/buildpacks-git and
// the buildpacks are the repository's; an installed package (node_modules/@svc/…) holds its
// own copy, which its tarball gets when it is packed (scripts/package-files.mjs). The copy
// exists in the checkout only while a pack runs, so the checkout never reads it.
const IN_CHECKOUT = basename(resolve(__dirname, '..', '..')) === 'packages';

/** Where the built-in buildpacks are: the repository's `buildpacks/` in a checkout, else the installed package's. */
export const BUILTIN_BUILDPACKS_DIR = IN_CHECKOUT ? resolve(__dirname, '..', '..', '..', 'buildpacks') : resolve(__dirname, '..', 'buildpacks');

/** Where the buildpacks are and how fetches are bounded. */
export interface GitBuildpackCatalogOptions {
  /** The directory holding the built-in buildpacks (`node`, `plain`): `BUILTIN_BUILDPACKS_DIR`. */
  builtinDir: string;
  /** The operator's buildpacks (`BUILDPACKS_DIR`), one directory each; none when null or absent. */
  operatorDir?: string | null;
  /** Where fetched buildpacks are kept, one directory per URL and ref. */
  fetchDir: string;
  /** The longest a fetch may take (default 120 s). */
  timeoutMs?: number;
  /** The most a fetched buildpack may take on disk, git's transfer included (default 100 MiB). */
  sizeLimitBytes?: number;
  /** The git binary (default `git` on PATH). */
  git?: string;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_SIZE_LIMIT = 100 * 1024 * 1024;

/**
 * The buildpacks on this machine (the operator's, then the built-ins) and those fetched
 * from git URLs, each fetch kept and reused for the same URL and ref.
 */
export class GitBuildpackCatalog implements BuildpackCatalog {
  private readonly builtinDir: string;
  private readonly operatorDir: string | null;
  private readonly fetchDir: string;
  private readonly timeoutMs: number;
  private readonly sizeLimitBytes: number;
  private readonly git: string;

  constructor(options: GitBuildpackCatalogOptions) {
    this.builtinDir = resolve(options.builtinDir);
    this.operatorDir = options.operatorDir ? resolve(options.operatorDir) : null;
    this.fetchDir = resolve(options.fetchDir);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.sizeLimitBytes = options.sizeLimitBytes ?? DEFAULT_SIZE_LIMIT;
    this.git = options.git ?? 'git';
  }

  /**
   * The operator's buildpacks sorted by name, then the built-ins in order (plain last). An
   * operator's buildpack named like a built-in takes the built-in's place in that order.
   */
  async installed(): Promise<InstalledBuildpack[]> {
    const operator = this.operatorDir === null ? [] : await listBuildpackNames(this.operatorDir);
    const result: InstalledBuildpack[] = [];
    for (const name of operator) {
      if (!(BUILTIN_BUILDPACKS as readonly string[]).includes(name)) {
        result.push({ name, directory: join(this.operatorDir as string, name) });
      }
    }
    for (const name of BUILTIN_BUILDPACKS) {
      if (operator.includes(name)) {
        result.push({ name, directory: join(this.operatorDir as string, name) });
      } else if (isBuildpackName(name) && (await isBuildpackDirectory(join(this.builtinDir, name)))) {
        result.push({ name, directory: join(this.builtinDir, name), needs: BUILTIN_NEEDS[name] });
      }
    }
    return result;
  }

  /**
   * Fetches the buildpack at `url` and `ref`, or reuses the one fetched before.
   * @throws RequestRejected `BUILD.BUILDPACK_FETCH` when git cannot fetch it, a limit is
   *   passed, or what it fetched has no executable `bin/detect`, `bin/compile` and `bin/release`.
   */
  async fetch(url: string, ref: string | null, output: (line: string) => void): Promise<InstalledBuildpack> {
    const shown = redactUrl(url);
    const name = fetchedName(url, ref);
    if (!isFetchableUrl(url)) throw fetchRejected(shown, 'the URL is not one git can be given');
    if (ref !== null && !isFetchableRef(ref)) throw fetchRejected(shown, `'${ref.slice(0, 200)}' is not a branch, tag or commit name`);

    const directory = join(this.fetchDir, fetchKey(url, ref));
    if (await isBuildpackDirectory(directory)) {
      output(`-----> Using buildpack ${fetchedName(shown, ref)} (fetched before)`);
      return { name, directory };
    }
    await mkdir(this.fetchDir, { recursive: true });
    await this.removeAbandoned();
    output(`-----> Fetching buildpack ${fetchedName(shown, ref)}`);
    const staging = join(this.fetchDir, `.fetch-${randomBytes(8).toString('hex')}`);
    try {
      const commit = await fetchIntoDirectory(url, ref, staging, {
        git: this.git,
        timeoutMs: this.timeoutMs,
        sizeLimitBytes: this.sizeLimitBytes,
      });
      if (!(await isBuildpackDirectory(staging))) {
        throw new FetchFailure('it is no buildpack: bin/detect, bin/compile and bin/release must be executable files');
      }
      await this.moveIntoPlace(staging, directory);
      output(`       at commit ${commit}`);
      return { name, directory };
    } catch (error) {
      if (error instanceof FetchFailure) throw fetchRejected(shown, error.message.split(url).join(shown));
      throw error;
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  /**
   * Removes what fetches cut short by a stopped controller left (staging copies, temporary
   * HOMEs): those older than twice the time limit, which no running fetch can own.
   */
  private async removeAbandoned(): Promise<void> {
    const before = Date.now() - 2 * this.timeoutMs;
    for (const entry of await readdir(this.fetchDir)) {
      if (!entry.startsWith('.fetch-') && !entry.startsWith('.home-')) continue;
      const path = join(this.fetchDir, entry);
      const info = await lstat(path).catch(() => null);
      if (info !== null && info.mtimeMs < before) await rm(path, { recursive: true, force: true });
    }
  }

  /** Renames the fetched directory into place; a concurrent fetch of the same buildpack that got there first wins. */
  private async moveIntoPlace(staging: string, directory: string): Promise<void> {
    // A directory there that is no buildpack is what an interrupted removal left.
    if (!(await isBuildpackDirectory(directory))) await rm(directory, { recursive: true, force: true });
    try {
      await rename(staging, directory);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !(await isBuildpackDirectory(directory))) throw error;
    }
  }
}

function fetchRejected(url: string, reason: string): RequestRejected {
  return new RequestRejected(BUILDPACK_FETCH, `The buildpack ${url} could not be fetched: ${reason}`);
}
