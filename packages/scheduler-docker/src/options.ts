import type Docker from 'dockerode';
import { BatchedLogWriter, SCHEDULER_LOG_SOURCE, memoryLimitBytes, startTimeoutOf as startTimeout, type BuildToRun, type Clock, type LogStore } from '@svc/core';
import { ImagePuller } from './images';
import type { RegistryLogin } from './registry-login';
import { engineBuildProblem } from './runnable-builds';

/** What the Docker and Swarm schedulers share of their options: the engine, the log, and how containers are isolated and limited. */
export interface EngineSchedulerOptions {
  /** The engine client (shared with the image builder); with Swarm, a manager's. */
  docker: Docker;
  /** Where container output, pull progress and the scheduler's own events go. */
  logs: Pick<LogStore, 'append'>;
  clock?: Clock;
  /** Names this controller on the engine (label `svc.instance`): objects of another instance are never touched. Default `default`. */
  instance?: string;
  /**
   * The installation's fingerprint (label `svc.installation`; the server derives it from
   * SECRET_KEY): objects of the instance that carry another installation's are never adopted
   * or removed, and the scheduler refuses to prepare while there are any. Default none: objects
   * are not labelled and every one of the instance is taken as this controller's.
   */
  installation?: string | null;
  /** Called with what the operator should know. */
  onWarning?: (message: string) => void;
  /** `uid[:gid]` every container runs as, whatever the image says. Default `65534:65534` (nobody). */
  user?: string;
  /** Most processes and threads in one container. Default 256. */
  pidsLimit?: number;
  /** Mount the image's root file system read-only (with a writable /tmp). Default false. */
  readonlyRootfs?: boolean;
  /**
   * The memory limit of containers whose app sets none, and of one-off commands (e.g. `1G`).
   * Default `1G`; null: none (a container may then take all the host's memory).
   */
  defaultMemory?: string | null;
  /** The CPU limit (shares, 1024 = one CPU) of containers whose app sets none, and of one-off commands. Default 1024; null: none. */
  defaultCpu?: number | null;
  /** `missing`: pull only images the engine does not have (default); `always`: pull before every release's first container. */
  pullPolicy?: 'missing' | 'always';
  /** How long a `web` container has to accept connections on PORT (or answer HEALTHCHECK_URL 2xx). Default 30000. */
  startTimeoutMs?: number;
  /** How long a container of another type must keep running to count as up. Default 1000. */
  settleMs?: number;
  /** From SIGTERM to SIGKILL when a container stops, in ms. Default 10000. */
  stopTimeoutMs?: number;
  /** The platform registry's login, sent with pulls of its images (and, on Swarm, kept with their services). Default none. */
  registryLogin?: RegistryLogin | null;
  /** Registries on this host or a private network images may be pulled from (`REGISTRY_ALLOW`, and the platform's `REGISTRY`). Default none. */
  registryAllow?: readonly string[];
  /** The engine's log limits of every container (json-file `max-size`, `max-file`). Default 10m and 3. */
  logLimit?: LogLimit;
}

/** How much output the engine keeps of one container: `maxSize` per file (`10m`), `maxFiles` files. */
export interface LogLimit {
  maxSize: string;
  maxFiles: number;
}

/** The default log limit: 10 MB in each of 3 files. */
export const DEFAULT_LOG_LIMIT: LogLimit = Object.freeze({ maxSize: '10m', maxFiles: 3 });

/** The engine's log configuration for a container with that limit (json-file). */
export function logConfigOf(limit: LogLimit): { Type: string; Config: Record<string, string> } {
  return { Type: 'json-file', Config: { 'max-size': limit.maxSize, 'max-file': String(limit.maxFiles) } };
}

/** Those options with their defaults, and the log writer and image puller made from them. */
export interface EngineScheduling {
  readonly docker: Docker;
  readonly log: BatchedLogWriter;
  readonly images: ImagePuller;
  /** The scheduler's answer to `Scheduler.checkRunnable`, with its image puller (see `engineBuildProblem`). */
  readonly checkRunnable: (build: BuildToRun) => Promise<string | null>;
  readonly instance: string;
  readonly installation: string | null;
  readonly warn: (message: string) => void;
  readonly user: string;
  readonly pidsLimit: number;
  readonly readonlyRootfs: boolean;
  readonly defaultMemory: string | null;
  readonly defaultCpu: number | null;
  readonly startTimeoutMs: number;
  readonly settleMs: number;
  readonly stopTimeoutMs: number;
  readonly registryLogin: RegistryLogin | null;
  readonly logConfig: { Type: string; Config: Record<string, string> };
}

/**
 * How long a container of `env` may take to start: its own `HEALTHCHECK_TIMEOUT` (seconds),
 * at most the scheduler's `startTimeoutMs` (the core's rule).
 */
export function startTimeoutOf(base: Pick<EngineScheduling, 'startTimeoutMs'>, env: Record<string, string>): number {
  return startTimeout(base.startTimeoutMs, env);
}


const systemClock: Clock = { now: () => new Date() };

/**
 * Resolves the shared options; pull progress goes to the app's log.
 * @throws ValidationFailed (from the core) when `defaultMemory` is not a size.
 */
export function engineScheduling(options: EngineSchedulerOptions): EngineScheduling {
  const log = new BatchedLogWriter(options.logs, options.clock ?? systemClock);
  const defaultMemory = options.defaultMemory === undefined ? '1G' : options.defaultMemory;
  memoryLimitBytes(defaultMemory);
  const images = new ImagePuller(
    options.docker,
    options.pullPolicy ?? 'missing',
    (app, message) => log.write(app, SCHEDULER_LOG_SOURCE, message),
    options.registryLogin ?? null,
    options.registryAllow ?? [],
  );
  return {
    docker: options.docker,
    log,
    images,
    checkRunnable: (build) => engineBuildProblem(images, build),
    instance: options.instance ?? 'default',
    installation: options.installation ?? null,
    warn: options.onWarning ?? (() => undefined),
    user: options.user ?? '65534:65534',
    pidsLimit: options.pidsLimit ?? 256,
    readonlyRootfs: options.readonlyRootfs ?? false,
    defaultMemory,
    defaultCpu: options.defaultCpu === undefined ? 1024 : options.defaultCpu,
    startTimeoutMs: options.startTimeoutMs ?? 30_000,
    settleMs: options.settleMs ?? 1000,
    stopTimeoutMs: options.stopTimeoutMs ?? 10_000,
    registryLogin: options.registryLogin ?? null,
    logConfig: logConfigOf(options.logLimit ?? DEFAULT_LOG_LIMIT),
  };
}
