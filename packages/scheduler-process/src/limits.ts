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
 * null when there is no limit.
 * @throws Error when the text is not a memory limit.
 */
export function memoryLimitBytes(limit: string | null): number | null {
  if (limit === null) return null;
  const match = /^([0-9]+)(B|K|M|G|KB|MB|GB)$/i.exec(limit.trim());
  if (!match) throw new Error(`unreadable memory limit "${limit}"`);
  const [, amount, unit] = match;
  return Number(amount) * (MEMORY_UNITS[(unit ?? 'B').toUpperCase()] ?? 1);
}

/** The niceness that stands for no CPU preference: the default weight of the kernel's scheduler. */
const DEFAULT_SHARES = 1024;
/** Each niceness step changes the kernel scheduler's weight of a process by about 1.25 times. */
const WEIGHT_PER_NICE_STEP = 1.25;
const MAX_NICE = 19;

/**
 * The niceness that gives a process about `shares`/1024 of the default CPU weight when the
 * machine is busy (0 for no value, 0, or 1024 and more; at most 19). It is a priority, not a cap.
 */
export function niceForCpuShares(shares: number | null): number {
  if (shares === null || !(shares > 0) || shares >= DEFAULT_SHARES) return 0;
  const steps = Math.round(Math.log(DEFAULT_SHARES / shares) / Math.log(WEIGHT_PER_NICE_STEP));
  return Math.min(MAX_NICE, Math.max(0, steps));
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

/** A duration in milliseconds for people, in seconds, e.g. `1 s`, `0.5 s`. */
export function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : Number(seconds.toFixed(1))} s`;
}
