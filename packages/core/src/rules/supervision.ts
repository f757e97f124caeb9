/*
 * What every scheduler that supervises containers itself decides the same way: when a
 * container counts as up, how long it waits after a crash, how it is named in the app's log,
 * and where it is reached. The schedulers keep only what their engine does differently.
 */
import { isRoutedType } from './releases';

/** The source of the lines a scheduler writes to an app's log. */
export const SCHEDULER_LOG_SOURCE = 'svc[scheduler]';

/** The note a one-off command stopped by its timeout ends its output with (its exit code is RUN_TIMEOUT_EXIT_CODE). */
export function runTimeoutNote(timeoutSeconds: number): string {
  return `killed after the timeout of ${timeoutSeconds} s`;
}

/** How long a `web` container has to accept connections (or answer HEALTHCHECK_URL 2xx) by default. */
export const DEFAULT_START_TIMEOUT_MS = 30_000;
/** How long a container of another type must keep running to count as up, by default. */
export const DEFAULT_SETTLE_MS = 1000;
/** From SIGTERM to SIGKILL when a container stops, by default. */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;
/** How often readiness is checked while a container starts, by default. */
export const DEFAULT_PROBE_INTERVAL_MS = 100;

/** The shortest and the longest wait of one readiness check. */
const PROBE_WAIT_MIN_MS = 100;
const PROBE_WAIT_MAX_MS = 2000;

/** How long a crashed container waits before it is started again. */
export interface RestartBackoff {
  /** The first wait; each failure in a row doubles it. */
  initialMs: number;
  /** The longest wait. */
  maxMs: number;
  /** A container that stayed up this long starts over from the first wait when it crashes. */
  resetAfterMs: number;
}

/** The back-off with the defaults (1 s, doubling up to 60 s, reset after 60 s up) for what is not given. */
export function restartBackoff(options: Partial<RestartBackoff> = {}): RestartBackoff {
  return { initialMs: options.initialMs ?? 1000, maxMs: options.maxMs ?? 60_000, resetAfterMs: options.resetAfterMs ?? 60_000 };
}

/** The wait before the next start after `failures` failures in a row before this one. */
export function restartDelay(backoff: RestartBackoff, failures: number): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** failures);
}

/** When one container came up and how often it failed in a row since: the waits of its restarts. */
export class CrashHistory {
  private failures = 0;
  private upSince: number | null = null;

  constructor(private readonly backoff: RestartBackoff) {}

  /** The container is up since `now` (milliseconds). */
  up(now: number): void {
    this.upSince = now;
  }

  /**
   * The container crashed, or a restart of it failed, at `now`: the wait before the next
   * start. A container that had stayed up long enough starts over from the first wait.
   */
  failed(now: number): number {
    if (this.upSince !== null && now - this.upSince >= this.backoff.resetAfterMs) this.failures = 0;
    this.upSince = null;
    const delay = restartDelay(this.backoff, this.failures);
    this.failures++;
    return delay;
  }
}

/**
 * How long a container of `env` may take to start: its own `HEALTHCHECK_TIMEOUT` (seconds),
 * at most the scheduler's `limitMs`.
 */
export function startTimeoutOf(limitMs: number, env: Record<string, string>): number {
  const own = Number(env.HEALTHCHECK_TIMEOUT);
  return Number.isFinite(own) && own > 0 ? Math.min(own * 1000, limitMs) : limitMs;
}

/**
 * The path and query HEALTHCHECK_URL asks for: the value is a path (`/health`) or a URL whose
 * path and query are used. Null when the value is empty.
 */
export function healthcheckPath(value: string | undefined): string | null {
  const text = value?.trim() ?? '';
  if (text === '') return null;
  let path = text;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      const parsed = new URL(text);
      path = `${parsed.pathname}${parsed.search}`;
    } catch {
      path = '/';
    }
  }
  return path.startsWith('/') ? path : `/${path}`;
}

/** A host as a URL writes it: an IPv6 address in brackets (`[fd00::2]`), anything else as it is. */
export function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/**
 * Where the health check of a container on host:port asks (see {@link healthcheckPath}); the
 * host is always the container's. Null when the value is empty.
 */
export function healthcheckUrl(value: string | undefined, host: string, port: number): string | null {
  const path = healthcheckPath(value);
  if (path === null) return null;
  return `http://${urlHost(host)}:${port}${path}`;
}

/** How a starting container is found to be up. */
export type ReadinessCheck =
  /** It keeps running for the settle time (types the router does not send to). */
  | { kind: 'settle' }
  /** Its HEALTHCHECK_URL answers 2xx. */
  | { kind: 'http'; url: string }
  /** Its PORT accepts connections. */
  | { kind: 'tcp'; host: string; port: number };

/** The check of a container of `type` with `env`, listening on host:port. */
export function readinessCheck(type: string, env: Record<string, string>, host: string, port: number): ReadinessCheck {
  if (!isRoutedType(type)) return { kind: 'settle' };
  const url = healthcheckUrl(env.HEALTHCHECK_URL, host, port);
  return url === null ? { kind: 'tcp', host, port } : { kind: 'http', url };
}

/** Whether a health check's answer (an HTTP status, or null for none) means up: 2xx. */
export function isReadyStatus(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}

/** A health check's answer as a failure reports it: `status 503`, `no answer`. */
export function answerOf(status: number | null): string {
  return status === null ? 'no answer' : `status ${status}`;
}

/** How long one readiness check may wait, `now` and the deadline in milliseconds: 0.1 to 2 s, no later than the deadline when it can. */
export function probeWaitMs(deadline: number, now: number): number {
  return Math.max(PROBE_WAIT_MIN_MS, Math.min(PROBE_WAIT_MAX_MS, deadline - now));
}

/** Why a `web` container is not up at its deadline (the last output is appended by the caller). */
export function notReadyReason(check: Exclude<ReadinessCheck, { kind: 'settle' }>, timeoutMs: number, lastAnswer: string): string {
  const within = formatSeconds(timeoutMs);
  return check.kind === 'http'
    ? `HEALTHCHECK_URL ${new URL(check.url).pathname} did not answer 2xx within ${within} (last: ${lastAnswer})`
    : `it did not accept connections on port ${check.port} within ${within}`;
}

/** A duration in milliseconds for people, in seconds: `1 s`, `0.5 s`, `2.5 s`. */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** What names a container in the scheduler's lines: its type, number and release. */
export interface ContainerName {
  app: string;
  type: string;
  num: number;
  release: number;
}

/** How the scheduler's lines name a container: `web.1 (v3)`. */
export function containerLabel(spec: ContainerName): string {
  return `${spec.type}.${spec.num} (v${spec.release})`;
}

/** The log source of a container's own output: `myapp[web.1]`. */
export function outputSource(spec: ContainerName): string {
  return `${spec.app}[${spec.type}.${spec.num}]`;
}

/** Where a container of an app can be reached. */
export interface Endpoint {
  host: string;
  port: number;
  /** The container (its id), so that the router can stop sending to one being stopped. */
  id: string;
}

/** A container as the endpoints see it: up or not, and where it listens when known. */
export interface Reachable {
  spec: ContainerName & { id: string };
  state: string;
  host: string | null;
  port: number | null;
}

/** Where the `up` containers of one process type of an app listen, in container number order. */
export function endpointsOf(containers: Iterable<Reachable>, app: string, type: string): Endpoint[] {
  return [...containers]
    .filter((c) => c.spec.app === app && c.spec.type === type && c.state === 'up' && c.host !== null && c.port !== null)
    .sort((a, b) => a.spec.num - b.spec.num)
    .map((c) => ({ host: c.host as string, port: c.port as number, id: c.spec.id }));
}
