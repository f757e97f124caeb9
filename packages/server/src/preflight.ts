import { createServer } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SchedulerKind } from './config';

/*
 * Start-up checks: what would make the controller fail half-way, or come up unable to run
 * the apps it has, is found before anything is made (a port bound, an engine network, a
 * firewall rule), and said with the setting to change and how.
 */

/** A start-up check that failed: the process stops with this one message. */
export class PreflightError extends Error {
  constructor(
    /** The setting the message names (e.g. `GIT_SSH_PORT`). */
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'PreflightError';
  }
}

/** A port the controller binds, by the setting that names it. */
export interface PortSetting {
  setting: 'PORT' | 'ROUTER_PORT' | 'ROUTER_TLS_PORT' | 'GIT_SSH_PORT';
  port: number;
  host: string;
  /** The value that turns it off, when there is one. */
  off: string | null;
}

/** The part of the configuration the port checks read. */
export interface PortsConfig {
  port: number;
  host: string;
  routerPort: number | null;
  routerTlsPort: number | null;
  routerHost: string;
  gitSshPort: number | null;
  gitSshHost: string;
}

/** The fixed ports the configuration asks for (0, any free port, and ports turned off are left out). */
export function portSettings(config: PortsConfig): PortSetting[] {
  const all: Array<PortSetting | null> = [
    { setting: 'PORT', port: config.port, host: config.host, off: null },
    config.routerPort === null ? null : { setting: 'ROUTER_PORT', port: config.routerPort, host: config.routerHost, off: 'off' },
    config.routerTlsPort === null ? null : { setting: 'ROUTER_TLS_PORT', port: config.routerTlsPort, host: config.routerHost, off: 'unset' },
    config.gitSshPort === null ? null : { setting: 'GIT_SSH_PORT', port: config.gitSshPort, host: config.gitSshHost, off: 'off' },
  ];
  return all.filter((entry): entry is PortSetting => entry !== null && entry.port > 0);
}

/** Two settings that name the same port: the message, or null when every port differs. */
export function samePortProblem(ports: PortSetting[]): PreflightError | null {
  for (const [index, first] of ports.entries()) {
    const second = ports.slice(index + 1).find((other) => other.port === first.port);
    if (second !== undefined) {
      return new PreflightError(second.setting, `${first.setting} and ${second.setting} are both ${first.port}: give ${second.setting} another port`);
    }
  }
  return null;
}

/** The message for a port that cannot be bound, naming its setting and the fix. */
export function portProblem(entry: PortSetting, code: string, detail: string): PreflightError {
  const off = entry.off === null ? '' : entry.off === 'unset' ? `, or leave ${entry.setting} unset` : `, or set ${entry.setting}=${entry.off}`;
  const what =
    code === 'EADDRINUSE'
      ? `port ${entry.port} on ${entry.host} is already in use (another controller or program listens there)`
      : code === 'EACCES'
        ? `port ${entry.port} on ${entry.host} may not be bound by this user (ports below 1024 need root)`
        : `port ${entry.port} on ${entry.host} cannot be bound (${detail})`;
  return new PreflightError(entry.setting, `${entry.setting}: ${what}: stop what holds it or set ${entry.setting} to a free port${off}`);
}

/** Binds the port for an instant: null when it is free, else the error's code and message. */
function tryBind(port: number, host: string): Promise<{ code: string; message: string } | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve({ code: error.code ?? 'UNKNOWN', message: error.message }));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** Checks that every fixed port of the configuration can be bound; throws a PreflightError naming the first that cannot. */
export async function checkPorts(config: PortsConfig): Promise<void> {
  const ports = portSettings(config);
  const same = samePortProblem(ports);
  if (same !== null) throw same;
  for (const entry of ports) {
    const failure = await tryBind(entry.port, entry.host);
    if (failure !== null) throw portProblem(entry, failure.code, failure.message);
  }
}

/** The file in DATA_DIR that records which scheduler ran the apps of this data directory. */
export const SCHEDULER_RECORD_FILE = 'scheduler';

/** The setting that lets a controller adopt the apps another scheduler ran. */
export const ADOPT_SWITCH = 'SCHEDULER_ADOPT';

/** Schedulers whose apps are recorded: `memory` runs nothing, so it neither records nor is checked. */
const RECORDED: ReadonlySet<SchedulerKind> = new Set(['process', 'docker', 'swarm']);

/** What to do with the scheduler recorded in the data directory. */
export type SchedulerChange =
  | { action: 'keep' }
  | { action: 'record'; message: string | null }
  | { action: 'refuse'; error: PreflightError }
  | { action: 'adopt'; message: string };

/**
 * Compares the scheduler this start would use with the one recorded in the data directory:
 * the same (keep), none recorded or no app has containers (record the new one), a change
 * with apps that would not run (refuse, unless SCHEDULER_ADOPT=1: adopt them).
 */
export function schedulerChange(recorded: SchedulerKind | null, current: SchedulerKind, apps: string[], adopt: boolean): SchedulerChange {
  if (!RECORDED.has(current)) return { action: 'keep' };
  if (recorded === current) return { action: 'keep' };
  if (recorded === null) return { action: 'record', message: null };
  if (apps.length === 0) return { action: 'record', message: `the data directory was last run with SCHEDULER=${recorded}; no app has containers, so it now runs with ${current}` };
  const names = apps.join(', ');
  // Pushing the same commit again changes nothing (git says everything is up to date): a new, empty commit makes the build.
  const rebuild =
    recorded === 'process' || current === 'process'
      ? `, then rebuild each from its working copy with git commit --allow-empty -m rebuild && git push svc main: a build made for ${recorded} does not run on ${current}`
      : '';
  if (adopt) {
    return {
      action: 'adopt',
      message: `${ADOPT_SWITCH}=1: the apps the ${recorded} scheduler ran (${names}) are started with ${current}${rebuild}`,
    };
  }
  return {
    action: 'refuse',
    error: new PreflightError(
      'SCHEDULER',
      `this data directory was last run with SCHEDULER=${recorded}, and this start would use ${current}: ${apps.length === 1 ? 'app' : 'apps'} ${names} would not run. ` +
        `Set SCHEDULER=${recorded} to keep running them as before, or set ${ADOPT_SWITCH}=1 (once) to adopt them with ${current}${rebuild}`,
    ),
  };
}

/** The scheduler recorded in the data directory, or null when none is (a new one, or written before the record existed). */
export function readSchedulerRecord(dataDir: string): SchedulerKind | null {
  const file = join(dataDir, SCHEDULER_RECORD_FILE);
  if (!existsSync(file)) return null;
  const value = readFileSync(file, 'utf8').trim();
  return RECORDED.has(value as SchedulerKind) ? (value as SchedulerKind) : null;
}

/** The logger the scheduler check writes to. */
interface PreflightLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Checks the scheduler recorded in the data directory against this start's, and records this
 * one when the start may go on.
 * @throws PreflightError when apps of another scheduler would not run and SCHEDULER_ADOPT is not set.
 */
export async function checkSchedulerRecord(dataDir: string, current: SchedulerKind, apps: () => Promise<string[]>, adopt: boolean, logger: PreflightLogger): Promise<void> {
  const recorded = readSchedulerRecord(dataDir);
  if (!RECORDED.has(current) || recorded === current) return;
  const change = schedulerChange(recorded, current, recorded === null ? [] : await apps(), adopt);
  if (change.action === 'refuse') throw change.error;
  if (change.action === 'adopt') logger.warn({ scheduler: current, was: recorded }, change.message);
  if (change.action === 'record' && change.message !== null) logger.info({ scheduler: current, was: recorded }, change.message);
  writeFileSync(join(dataDir, SCHEDULER_RECORD_FILE), `${current}\n`);
}

/**
 * The `/readyz` fields for what keeps apps from running: `degraded` with the reasons (each
 * with its fix) when no app can run, and `warnings` for what only some builds need (e.g. the
 * stack image of buildpack builds); nothing when all is well.
 */
export function readinessDetails(reasons: string[], warnings: string[]): Record<string, string | string[]> {
  return {
    ...(reasons.length === 0 ? {} : { status: 'degraded', reasons }),
    ...(warnings.length === 0 ? {} : { warnings }),
  };
}
