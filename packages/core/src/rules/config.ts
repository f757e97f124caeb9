import { ValidationFailed } from '../errors';
import type { Config, CpuLimits, MemoryLimits, Tags } from '../model/entities';
import { FieldErrorCollector, isPlainObject, toInteger } from './fields';

export const CONFIG_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const PROCESS_TYPE_PATTERN = /^[a-z0-9]+([-_][a-z0-9]+)*$/;
export const MEMORY_PATTERN = /^[0-9]+(B|K|M|G|KB|MB|GB)$/i;
export const TAG_KEY_PATTERN = /^[A-Za-z]+$/;
export const TAG_VALUE_PATTERN = /^[A-Za-z0-9_]+$/;
export const CPU_MAX = 1024;
/**
 * Variables the service sets itself; users may neither set nor unset them. A body may repeat
 * them with their current values (a pulled config pushed back, as the Deis v1 client does):
 * they are then ignored.
 */
export const SERVICE_VARIABLES = ['SVC_APP', 'SVC_RELEASE'] as const;
export type ServiceVariable = (typeof SERVICE_VARIABLES)[number];

/** Requested changes to a config: a null value unsets the key. */
export interface ConfigChanges {
  values: Record<string, string | null>;
  memory: Record<string, string | null>;
  cpu: Record<string, number | null>;
  tags: Record<string, string | null>;
  /**
   * Service variables the body repeated, with the values it gave; present only when there is
   * any. They change nothing, and are accepted only when equal to the current ones
   * (`assertServiceVariablesCurrent`).
   */
  repeated?: Partial<Record<ServiceVariable, string>>;
}

const serviceVariableMessage = (key: string): string => `${key} is set by the platform and cannot be changed.`;

/**
 * Checks that the service variables a config body repeated hold their current values.
 * @throws ValidationFailed on `values` when one differs.
 */
export function assertServiceVariablesCurrent(changes: ConfigChanges, current: Record<ServiceVariable, string>): void {
  const errors = new FieldErrorCollector();
  for (const key of SERVICE_VARIABLES) {
    const given = changes.repeated?.[key];
    if (given !== undefined && given !== current[key]) errors.add('values', serviceVariableMessage(key));
  }
  errors.throwIfAny();
}

/**
 * Validates a config request body (an object, or a JSON string holding one, as old clients
 * send) into changes. All failing fields are reported at once.
 * @throws ValidationFailed on `values`, `memory`, `cpu`, `tags` or `non_field_errors`.
 */
export function parseConfigChanges(raw: unknown): ConfigChanges {
  let body = raw;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body) as unknown;
    } catch {
      throw ValidationFailed.field('non_field_errors', 'Invalid data. Expected a dictionary.');
    }
  }
  if (!isPlainObject(body)) throw ValidationFailed.field('non_field_errors', 'Invalid data. Expected a dictionary.');

  const errors = new FieldErrorCollector();
  const changes: ConfigChanges = { values: {}, memory: {}, cpu: {}, tags: {} };
  const section = (name: keyof ConfigChanges): Record<string, unknown> | null => {
    const value = body[name];
    if (value === undefined || value === null) return null;
    if (!isPlainObject(value)) {
      errors.add(name, 'Expected a dictionary of items.');
      return null;
    }
    return value;
  };

  for (const [key, value] of Object.entries(section('values') ?? {})) {
    if (!CONFIG_KEY_PATTERN.test(key)) {
      errors.add('values', `Config keys must start with a letter or underscore and contain only [A-Za-z0-9_]: ${key}`);
    } else if ((SERVICE_VARIABLES as readonly string[]).includes(key)) {
      // Repeating the current value is accepted (and ignored); whether it is current is known
      // only against the app's current release.
      if (typeof value === 'string') changes.repeated = { ...changes.repeated, [key as ServiceVariable]: value };
      else errors.add('values', serviceVariableMessage(key));
    } else if (key === '__proto__') {
      // Assigning it to a plain object changes the prototype instead: the variable would vanish silently.
      errors.add('values', `${key} cannot be used as a config key.`);
    } else if (value === null) {
      changes.values[key] = null;
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      changes.values[key] = String(value);
    } else {
      errors.add('values', `Config values must be strings, numbers or booleans: ${key}`);
    }
  }

  for (const [type, value] of Object.entries(section('memory') ?? {})) {
    if (!PROCESS_TYPE_PATTERN.test(type)) {
      errors.add('memory', `Process types can only contain [a-z0-9-_]: ${type}`);
    } else if (value === null) {
      changes.memory[type] = null;
    } else if (typeof value === 'string' && MEMORY_PATTERN.test(value)) {
      changes.memory[type] = value.toUpperCase();
    } else {
      errors.add('memory', `Memory limit format: <number><unit>, where unit = B, K, M, G, KB, MB or GB: ${type}`);
    }
  }

  for (const [type, value] of Object.entries(section('cpu') ?? {})) {
    const shares = value === null ? null : toInteger(value);
    if (!PROCESS_TYPE_PATTERN.test(type)) {
      errors.add('cpu', `Process types can only contain [a-z0-9-_]: ${type}`);
    } else if (value === null) {
      changes.cpu[type] = null;
    } else if (shares === null || shares < 0 || shares > CPU_MAX) {
      errors.add('cpu', `CPU shares must be an integer from 0 to ${CPU_MAX}: ${type}`);
    } else {
      changes.cpu[type] = shares;
    }
  }

  for (const [key, value] of Object.entries(section('tags') ?? {})) {
    if (!TAG_KEY_PATTERN.test(key)) {
      errors.add('tags', `Tag keys can only contain letters: ${key}`);
    } else if (value === null) {
      changes.tags[key] = null;
    } else if (typeof value === 'string' && TAG_VALUE_PATTERN.test(value)) {
      changes.tags[key] = value;
    } else {
      errors.add('tags', `Tag values can only contain [A-Za-z0-9_]: ${key}`);
    }
  }

  errors.throwIfAny();
  return changes;
}

function merge<T>(current: Record<string, T>, changes: Record<string, T | null>): Record<string, T> {
  const next: Record<string, T> = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}

/** The config parts that result from applying changes onto the current config. */
export interface MergedConfig {
  values: Record<string, string>;
  memory: MemoryLimits;
  cpu: CpuLimits;
  tags: Tags;
}

/** Applies changes onto a config; unsetting an absent key is not an error. */
export function mergeConfig(current: Pick<Config, 'values' | 'memory' | 'cpu' | 'tags'>, changes: ConfigChanges): MergedConfig {
  return {
    values: merge(current.values, changes.values),
    memory: merge(current.memory, changes.memory),
    cpu: merge(current.cpu, changes.cpu),
    tags: merge(current.tags, changes.tags),
  };
}

interface Diff {
  added: string[];
  changed: string[];
  deleted: string[];
}

function diff<T>(before: Record<string, T>, after: Record<string, T>): Diff {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const result: Diff = { added: [], changed: [], deleted: [] };
  for (const key of keys) {
    const had = Object.prototype.hasOwnProperty.call(before, key);
    const has = Object.prototype.hasOwnProperty.call(after, key);
    if (!had && has) result.added.push(key);
    else if (had && !has) result.deleted.push(key);
    else if (before[key] !== after[key]) result.changed.push(key);
  }
  return result;
}

const isEmpty = (d: Diff): boolean => d.added.length + d.changed.length + d.deleted.length === 0;

/**
 * Describes what changed between two configs, e.g. `added FOO and changed limits for memory`,
 * or `changed nothing`. Names are sorted; service variables never appear.
 */
export function describeConfigChange(
  before: Pick<Config, 'values' | 'memory' | 'cpu' | 'tags'>,
  after: MergedConfig,
): string {
  const parts: string[] = [];

  const values = diff(before.values, after.values);
  const valueParts: string[] = [];
  if (values.added.length) valueParts.push(`added ${values.added.join(', ')}`);
  if (values.changed.length) valueParts.push(`changed ${values.changed.join(', ')}`);
  if (values.deleted.length) valueParts.push(`deleted ${values.deleted.join(', ')}`);
  if (valueParts.length) parts.push(valueParts.join(', '));

  const limits: string[] = [];
  if (!isEmpty(diff(before.memory, after.memory))) limits.push('memory');
  if (!isEmpty(diff(before.cpu, after.cpu))) limits.push('cpu');
  if (limits.length) parts.push(`changed limits for ${limits.join(', ')}`);

  const tags = diff(before.tags, after.tags);
  const tagParts: string[] = [];
  if (tags.added.length) tagParts.push(`added tag ${tags.added.join(', ')}`);
  if (tags.changed.length) tagParts.push(`changed tag ${tags.changed.join(', ')}`);
  if (tags.deleted.length) tagParts.push(`deleted tag ${tags.deleted.join(', ')}`);
  if (tagParts.length) parts.push(tagParts.join(', '));

  return parts.length ? parts.join(' and ') : 'changed nothing';
}

/** The environment of an app's processes on a release: config values plus the service variables. */
export function releaseEnvironment(values: Record<string, string>, appId: string, version: number): Record<string, string> {
  return { ...values, SVC_APP: appId, SVC_RELEASE: `v${version}` };
}
