import type { SecureContextCacheOptions } from './certificates';
import type { ResolvedRoute, ServedCertificate } from './ports';
import type { RouteEntry } from './route-cache';
import type { RouterLimits, UpstreamPoolOptions } from './router';

/** Levels of the workers' own log lines, as pino numbers them. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;
export type LogLevel = keyof typeof LEVELS;

/** What a router worker is told when it starts (everything must survive the IPC channel's JSON). */
export interface WorkerSettings {
  id: number;
  connectTimeoutMs?: number;
  certificateCache?: Omit<SecureContextCacheOptions, 'now'>;
  accessLogSample?: number;
  limits?: RouterLimits;
  upstream?: UpstreamPoolOptions;
  logLevel: LogLevel;
  /** Whether the controller wants request figures (batches of `observed`). */
  observe: boolean;
  hasCertificates: boolean;
  /** Whether the controller answers ACME challenges (`challenge` messages). */
  hasChallenges?: boolean;
  httpsPort?: number;
}

/** One listener the workers open, in the order they were asked to. */
export interface ListenerSpec {
  kind: 'http' | 'https';
  port: number;
  host: string;
}

/** Messages from the controller to a worker. */
export type ToWorker =
  | { t: 'start'; settings: WorkerSettings }
  | { t: 'listen'; listener: ListenerSpec }
  /** Routes that changed; `listed`: routes of the table's listing (see RouteCache.apply). A new worker is sent the whole table this way. */
  | { t: 'routes'; entries: RouteEntry[]; listed?: boolean }
  | { t: 'resolved'; id: number; route?: ResolvedRoute | null; error?: string }
  | { t: 'found'; id: number; certificate?: ServedCertificate | null; error?: string }
  | { t: 'answered'; id: number; answer?: string | null; error?: string }
  | { t: 'invalidate'; name?: string }
  | { t: 'sync'; id: number }
  | { t: 'close'; timeoutMs: number };

/** Messages from a worker to the controller. */
export type FromWorker =
  | { t: 'listening'; kind: 'http' | 'https'; port?: number; error?: string }
  | { t: 'resolve'; id: number; host: string; fresh: boolean }
  | { t: 'find'; id: number; name: string }
  | { t: 'challenge'; id: number; host: string; token: string }
  | { t: 'observed'; batch: Array<[app: string | null, status: number, durationMs: number]> }
  | { t: 'synced'; id: number }
  | { t: 'closed' };

/**
 * Messages from a router process of its own to the controller connected to its control
 * socket (one JSON object a line): the router's ports first, then what its workers ask.
 */
export type ToController =
  | { t: 'hello'; http: number | null; https: number | null }
  | { t: 'replaced' }
  /** Every route of the controller's table (RouteTable.list), for the router to hold before traffic asks. */
  | { t: 'list'; id: number }
  | Extract<FromWorker, { t: 'resolve' | 'find' | 'challenge' | 'observed' | 'synced' }>;

/**
 * Messages from a controller to the router process: `ready` once its apps are up (from then
 * on its answers count), the answers, and the workers' own messages to pass on.
 */
export type FromController =
  | { t: 'ready' }
  /**
   * The listing asked for: `routes`, or `same` when it is the listing this connection was sent
   * last (nothing changed: not sent again), or `error` (none when the table cannot list).
   */
  | { t: 'listed'; id: number; routes?: Array<[host: string, route: ResolvedRoute]>; same?: boolean; error?: string }
  | Extract<ToWorker, { t: 'resolved' | 'found' | 'answered' | 'invalidate' | 'sync' }>;
