import { QuotaExceeded } from '../errors';
import type { Structure } from '../model/entities';

/** How much one tenant may have; each is a positive limit. */
export interface Quotas {
  /** Apps a user owns. */
  appsPerUser: number;
  /** Process types an app is scaled to (a type scaled to 0 does not count). */
  processTypesPerApp: number;
  /** Processes an app is scaled to, all types together. */
  processesPerApp: number;
  /** Processes all the apps a user owns are scaled to. */
  processesPerUser: number;
  /** Bytes of an app's config values: keys and values, UTF-8. */
  configBytes: number;
  /** Custom domains of an app. */
  domainsPerApp: number;
}

/**
 * @throws QuotaExceeded (`apps_per_user`) when a user who owns `owned` apps may not create another.
 */
export function assertAppQuota(owned: number, quotas: Quotas): void {
  if (owned >= quotas.appsPerUser) {
    throw new QuotaExceeded('apps_per_user', quotas.appsPerUser, `Quota exceeded: a user may own at most ${quotas.appsPerUser} apps.`);
  }
}

/** Processes a structure asks for, all types together. */
export function processCount(structure: Structure): number {
  return Object.values(structure).reduce((sum, count) => sum + Math.max(0, count), 0);
}

/** Process types a structure runs: those scaled above 0. */
function typeCount(structure: Structure): number {
  return Object.values(structure).filter((count) => count > 0).length;
}

/**
 * Checks an app's structure against the per-app quotas: process types scaled above 0, and
 * processes in all. A change that does not grow a count past its limit is let through, so
 * that an app over a lowered quota can still be scaled down.
 * @throws QuotaExceeded (`process_types_per_app`, `processes_per_app`).
 */
export function assertStructureQuota(structure: Structure, quotas: Quotas, previous: Structure = {}): void {
  const types = typeCount(structure);
  if (types > quotas.processTypesPerApp && types > typeCount(previous)) {
    throw new QuotaExceeded(
      'process_types_per_app',
      quotas.processTypesPerApp,
      `Quota exceeded: an app may run at most ${quotas.processTypesPerApp} process types, this would be ${types}.`,
    );
  }
  const processes = processCount(structure);
  if (processes > quotas.processesPerApp && processes > processCount(previous)) {
    throw new QuotaExceeded(
      'processes_per_app',
      quotas.processesPerApp,
      `Quota exceeded: an app may run at most ${quotas.processesPerApp} processes, this would be ${processes}.`,
    );
  }
}

/**
 * @throws QuotaExceeded (`processes_per_user`) when the apps of one owner would run more
 *   processes than allowed, and more than the `previous` total.
 */
export function assertUserProcessQuota(owner: string, processes: number, quotas: Quotas, previous = 0): void {
  if (processes > quotas.processesPerUser && processes > previous) {
    throw new QuotaExceeded(
      'processes_per_user',
      quotas.processesPerUser,
      `Quota exceeded: the apps of ${owner} may run at most ${quotas.processesPerUser} processes together, this would be ${processes}.`,
    );
  }
}

/** The size of config values as counted by the quota: each key and value in UTF-8 bytes. */
export function configSize(values: Record<string, string>): number {
  let bytes = 0;
  for (const [key, value] of Object.entries(values)) bytes += utf8Length(key) + utf8Length(value);
  return bytes;
}

/**
 * @throws QuotaExceeded (`config_bytes`) when config values are larger than allowed and
 *   larger than the `previous` ones (removing keys from an oversized config is let through).
 */
export function assertConfigQuota(values: Record<string, string>, quotas: Quotas, previous: Record<string, string> = {}): void {
  const size = configSize(values);
  if (size > quotas.configBytes && size > configSize(previous)) {
    throw new QuotaExceeded(
      'config_bytes',
      quotas.configBytes,
      `Quota exceeded: an app's config values may hold at most ${quotas.configBytes} bytes, this would be ${size}.`,
    );
  }
}

/** @throws QuotaExceeded (`domains_per_app`) when an app with `count` domains may not get another. */
export function assertDomainQuota(count: number, quotas: Quotas): void {
  if (count >= quotas.domainsPerApp) {
    throw new QuotaExceeded('domains_per_app', quotas.domainsPerApp, `Quota exceeded: an app may have at most ${quotas.domainsPerApp} domains.`);
  }
}

/** UTF-8 length without a Buffer: the core uses no Node APIs. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}
