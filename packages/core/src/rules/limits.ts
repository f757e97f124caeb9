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
