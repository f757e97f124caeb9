import { lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** The scripts of the Heroku contract that make a directory a buildpack. */
export const BUILDPACK_SCRIPTS = ['detect', 'compile', 'release'] as const;

/** The built-in buildpacks in the order they are tried; the plain one, which detects any app, is last. */
export const BUILTIN_BUILDPACKS = ['node', 'python', 'go', 'ruby', 'static', 'plain'] as const;

/**
 * Whether `name` is a safe name for an installed buildpack's directory: letters, digits,
 * `.`, `_` and `-`, starting with a letter or digit, at most 64 characters.
 */
export function isBuildpackName(name: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name);
}

/**
 * Whether `directory` is a buildpack: `bin/detect`, `bin/compile` and `bin/release` are
 * regular files (not links) that someone may execute.
 */
export async function isBuildpackDirectory(directory: string): Promise<boolean> {
  try {
    if (!(await stat(directory)).isDirectory()) return false;
    for (const script of BUILDPACK_SCRIPTS) {
      const info = await lstat(join(directory, 'bin', script));
      if (!info.isFile() || (info.mode & 0o111) === 0) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** The names of the buildpacks in `directory`, sorted; none when it does not exist. */
export async function listBuildpackNames(directory: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const names: string[] = [];
  for (const name of entries.filter(isBuildpackName).sort(compareNames)) {
    if (await isBuildpackDirectory(join(directory, name))) names.push(name);
  }
  return names;
}

/** Byte order, the same on every machine and locale. */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
