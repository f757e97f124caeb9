/** The primitives the configuration reads its variables with; each failure names the variable. */

/** A configuration value that cannot be used; the message names the variable. */
export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

export type Env = Record<string, string | undefined>;

export function text(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value.trim() === '' ? fallback : value.trim();
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^[0-9]+$/.test(raw.trim())) throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}, got ${value}`);
  return value;
}

/** An integer from `min` to `max` that is a power of two. */
export function powerOfTwo(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = integer(env, name, fallback, min, max);
  if ((value & (value - 1)) !== 0) throw new ConfigError(name, `must be a power of two from ${min} to ${max}, got ${value}`);
  return value;
}

export function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const value = text(env, name, fallback);
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

export function flag(env: Env, name: string, fallback: boolean): boolean {
  const value = text(env, name, fallback ? 'true' : 'false').toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got "${value}"`);
}

export function list(env: Env, name: string): string[] {
  return text(env, name, '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

