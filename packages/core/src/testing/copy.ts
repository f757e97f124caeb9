/**
 * A deep copy of plain data (objects, arrays, dates, primitives), so that what a fake
 * hands out and what it keeps never share a mutable part.
 */
export function deepCopy<T>(value: T): T {
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => deepCopy(item)) as T;
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[key] = deepCopy(item);
    return copy as T;
  }
  return value;
}
