/** Bytes per unit of a memory limit (powers of 1024), as the config's `memory` values write them. */
const MEMORY_UNITS: Record<string, number> = {
  B: 1,
  K: 1024,
  KB: 1024,
  M: 1024 ** 2,
  MB: 1024 ** 2,
  G: 1024 ** 3,
  GB: 1024 ** 3,
};

/**
 * The byte count of a memory limit such as `512M` or `1g` (units are powers of 1024);
 * null when there is no limit. What every scheduler enforces for a config's `memory` value.
 * @throws Error when the text is not a memory limit.
 */
export function memoryLimitBytes(limit: string | null): number | null {
  if (limit === null) return null;
  const match = /^([0-9]+)(B|K|M|G|KB|MB|GB)$/i.exec(limit.trim());
  if (!match) throw new Error(`unreadable memory limit "${limit}"`);
  const [, amount, unit] = match;
  return Number(amount) * (MEMORY_UNITS[(unit ?? 'B').toUpperCase()] ?? 1);
}

/** A byte count for people, e.g. `80.5 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit] ?? 'TiB'}`;
}

/** Bytes as MiB, as a setting in MB reads them (at most two decimals). */
const megabytes = (bytes: number): number => Math.round((bytes / 1024 ** 2) * 100) / 100;

/**
 * Why a build is refused for what it made, with the figures: e.g. `the build made 276 MiB, over
 * BUILD_IMAGE_LIMIT_MB=200: nothing of it is kept.` (the image of a buildpack or Dockerfile
 * build, or the compiled app directory where no image is made).
 */
export function buildOverImageLimit(madeBytes: number, limitBytes: number): string {
  return `the build made ${megabytes(madeBytes)} MiB, over BUILD_IMAGE_LIMIT_MB=${megabytes(limitBytes)}: nothing of it is kept.`;
}

/**
 * Why a build is refused for its cache, with the figures; the cache's file system stopped its
 * writes at the limit (and a margin), and the previous cache stays or is emptied as `previous` says.
 */
export function buildOverCacheLimit(usedBytes: number, limitBytes: number, previous: 'stays' | 'emptied'): string {
  const after = previous === 'stays' ? 'the previous one stays' : 'the next build starts without one';
  return `the build cache took ${megabytes(usedBytes)} MiB, over BUILD_CACHE_LIMIT_MB=${megabytes(limitBytes)} (writes past it fail): nothing of this build's cache is kept, ${after}.`;
}

/**
 * The size of the file system that bounds what a build writes under a limit of `limitBytes`
 * (its app directory or image, its cache): the limit, a sixteenth more for the file system's
 * own tables, and 8 MiB, so that a build just over the limit is seen over it (and refused with
 * its figure) while the most it can write stays this size.
 */
export function boundedDiskBytes(limitBytes: number): number {
  return limitBytes + Math.ceil(limitBytes / 16) + 8 * 1024 ** 2;
}
