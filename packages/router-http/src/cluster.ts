import cluster, { type Worker } from 'node:cluster';
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { CertificateStore, RequestObserver, RouteTable, RouterLogger } from './ports';
import type { FromWorker, ListenerSpec, LogLevel, ToWorker, WorkerSettings } from './protocol';
import { RouteCache } from './route-cache';
import type { AppRouterOptions } from './router';

/** Options of RouterCluster. */
export interface RouterClusterOptions extends Pick<AppRouterOptions, 'connectTimeoutMs' | 'accessLogSample' | 'limits' | 'upstream' | 'challenges' | 'httpsPort'> {
  /** Router worker processes, 1 or more (size it to the machine's cores). */
  workers: number;
  routes: RouteTable;
  certificates?: CertificateStore;
  /** How often the routes in use are looked up again and pushed to the workers. Default 1000 ms. */
  routeRefreshMs?: number;
  /** How long TLS contexts of server names are kept (in each worker). */
  certificateCache?: AppRouterOptions['certificateCache'];
  /** The controller's logger (workers starting, failing); the workers write their own lines to the shared standard output. */
  logger?: RouterLogger;
  /** The level of the workers' log lines (their access log is at `info`). Default `info`. */
  logLevel?: LogLevel;
  /** Hears every request the workers answered, in batches about once a second. */
  observer?: RequestObserver;
}

const silentLogger: RouterLogger = Object.freeze({ info: () => undefined, warn: () => undefined, error: () => undefined });

/**
 * The modules the controller's process preloads (`-r`, `--require`), and nothing else of its
 * Node options (no inspector or profiler ports twice): whatever makes the controller's imports
 * resolve (a test's copy of the workspace) does the same in its router workers.
 */
export function preloadsOf(execArgv: readonly string[]): string[] {
  const preloads: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    const next = execArgv[i + 1];
    if ((arg === '-r' || arg === '--require') && next !== undefined) {
      preloads.push(arg, next);
      i++;
    } else if (arg.startsWith('--require=')) {
      preloads.push(arg);
    }
  }
  return preloads;
}

/** The worker's entry point: compiled, or the TypeScript source when running from sources (tests). */
function workerEntry(): { exec: string; execArgv: string[] } {
  const compiled = join(__dirname, 'worker.js');
  if (existsSync(compiled)) return { exec: compiled, execArgv: preloadsOf(process.execArgv) };
  // Only when running from sources, where ts-node (a development dependency) is installed.
  // The workspace's packages resolve to their sources too (source-imports.ts), as under the test runner.
  return { exec: join(__dirname, 'worker.ts'), execArgv: ['-r', require.resolve('ts-node/register/transpile-only'), '-r', join(__dirname, 'source-imports.ts')] };
}

/**
 * A limit shared out between the workers: each enforces its part. Each worker is a process
 * of its own that accepts connections itself, so the caps (total, per client, reserve) are
 * divided, rounded up: a client's connections spread over the workers as the kernel hands
 * them out, and one worker full refuses only its own share.
 */
const share = (total: number | undefined, workers: number): number | undefined => (total === undefined ? undefined : Math.max(1, Math.ceil(total / workers)));

/** A worker's part of the reserved places: the reserve divided like the total, and always below the worker's total. */
export function reservedShare(reserved: number, total: number, workers: number): number {
  const workerTotal = Math.max(1, Math.ceil(total / workers));
  return Math.min(workerTotal - 1, Math.ceil(Math.max(0, reserved) / workers));
}

/** Routes per message to a worker: a table of 10,000s of routes goes in pieces, the controller's event loop free between them. */
export const ROUTES_PER_MESSAGE = 2000;

function chunksOf<T>(items: readonly T[], size = ROUTES_PER_MESSAGE): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

interface Listening {
  resolve: (address: AddressInfo) => void;
  reject: (error: Error) => void;
  waiting: number;
  port: number | null;
}

/**
 * The platform router off the controller's event loop: `workers` processes (node:cluster)
 * share the listening sockets, each accepting connections itself (no hand-off through the
 * controller) and running an AppRouter. The controller keeps the routes in memory (a
 * RouteCache over the route table: every route when the table can list them, read before the
 * workers start; else the routes in use; refreshed every `routeRefreshMs` and on
 * `routesChanged()`) and pushes every change to the workers, which route with no database
 * access; a worker gets the whole table when it starts, in pieces, before it listens. The
 * controller answers their lookups of host names they do not know yet and of certificates.
 * A worker that dies is replaced; the workers end with `close()` or when the controller's
 * process goes away. Connection limits are shared out between the workers.
 */
export class RouterCluster {
  private readonly routes: RouteCache;
  private readonly workers = new Set<Worker>();
  private readonly listeners: ListenerSpec[] = [];
  private readonly logger: RouterLogger;
  private readonly settings: Omit<WorkerSettings, 'id'>;
  private readonly unsubscribe: () => void;
  private listening: Listening | null = null;
  private starting: Promise<void> | null = null;
  private closing = false;
  /** Messages for workers still being sent the route table: they follow it, in order. */
  private readonly loading = new Map<Worker, ToWorker[]>();
  private nextWorker = 1;
  private nextSync = 1;
  private readonly syncs = new Map<string, () => void>();
  /** Route changes sent to the workers so far, and how many of them every worker had acknowledged at the last completed sync. */
  private routeMessages = 0;
  private routeMessagesSynced = 0;

  constructor(private readonly options: RouterClusterOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new Error('A router cluster needs at least one worker');
    this.logger = options.logger ?? silentLogger;
    this.routes = new RouteCache(options.routes, { refreshMs: options.routeRefreshMs ?? 1000 });
    this.unsubscribe = this.routes.onChange((entries, listed) => {
      this.routeMessages += 1;
      for (const chunk of chunksOf(entries)) this.broadcast({ t: 'routes', entries: chunk, ...(listed ? { listed } : {}) });
    });
    const limits = options.limits ?? {};
    this.settings = {
      ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.certificateCache === undefined ? {} : { certificateCache: options.certificateCache }),
      ...(options.accessLogSample === undefined ? {} : { accessLogSample: options.accessLogSample }),
      ...(options.upstream === undefined ? {} : { upstream: options.upstream }),
      limits: {
        ...limits,
        maxConnections: share(limits.maxConnections ?? 10_000, options.workers),
        maxConnectionsPerClient: share(limits.maxConnectionsPerClient ?? 256, options.workers),
        ...(limits.reservedConnections === undefined ? {} : { reservedConnections: reservedShare(limits.reservedConnections, limits.maxConnections ?? 10_000, options.workers) }),
      },
      logLevel: options.logLevel ?? 'info',
      observe: options.observer !== undefined,
      hasCertificates: options.certificates !== undefined,
      hasChallenges: options.challenges !== undefined,
      ...(options.httpsPort === undefined ? {} : { httpsPort: options.httpsPort }),
    };
  }

  /** Starts a plain HTTP listener in every worker; port 0 picks a free one (the same for all). */
  listen(port: number, host: string): Promise<AddressInfo> {
    return this.open({ kind: 'http', port, host });
  }

  /**
   * Starts an HTTPS listener in every worker, certificates chosen by the TLS server name.
   * @throws Error when the cluster has no certificate store.
   */
  listenTls(port: number, host: string): Promise<AddressInfo> {
    if (this.options.certificates === undefined) throw new Error('Serving HTTPS needs a certificate store');
    return this.open({ kind: 'https', port, host });
  }

  /** Forgets the cached certificate of a server name (or of all) in every worker. */
  invalidateCertificate(serverName?: string): void {
    this.broadcast(serverName === undefined ? { t: 'invalidate' } : { t: 'invalidate', name: serverName });
  }

  /** Looks the routes in use up again now and pushes what changed to the workers; resolves once every worker has them. */
  async routesChanged(): Promise<void> {
    await this.routes.refresh();
    // Nothing sent since the workers last acknowledged: they have every route already, and
    // a round of messages to each of them (after every API write, say) would change nothing.
    const sent = this.routeMessages;
    if (sent === this.routeMessagesSynced) return;
    const id = this.nextSync++;
    await Promise.all(
      [...this.workers].map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.isDead() || !worker.isConnected()) {
              resolve();
              return;
            }
            // A worker that dies meanwhile has nothing left to update.
            const done = (): void => {
              clearTimeout(timer);
              this.syncs.delete(`${worker.id}:${id}`);
              worker.off('exit', done);
              resolve();
            };
            const timer = setTimeout(done, 5000);
            this.syncs.set(`${worker.id}:${id}`, done);
            worker.once('exit', done);
            this.reply(worker, { t: 'sync', id });
          }),
      ),
    );
    this.routeMessagesSynced = Math.max(this.routeMessagesSynced, sent);
  }

  /** The process ids of the workers running now. */
  pids(): number[] {
    return [...this.workers].map((worker) => worker.process.pid).filter((pid): pid is number => pid !== undefined);
  }

  /**
   * Tells every worker to stop accepting and let requests in flight finish for up to
   * `timeoutMs`; a worker still running a little after that is killed.
   */
  async close(timeoutMs = 10_000): Promise<void> {
    this.closing = true;
    this.unsubscribe();
    this.routes.clear(true);
    const exits = [...this.workers].map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) {
            resolve();
            return;
          }
          const killer = setTimeout(() => worker.process.kill('SIGKILL'), timeoutMs + 2000);
          worker.once('exit', () => {
            clearTimeout(killer);
            resolve();
          });
          try {
            worker.send({ t: 'close', timeoutMs } satisfies ToWorker);
          } catch {
            worker.process.kill('SIGKILL');
          }
        }),
    );
    await Promise.all(exits);
    this.listening?.reject(new Error('The router was closed'));
  }

  private async open(listener: ListenerSpec): Promise<AddressInfo> {
    if (this.closing) throw new Error('The router is closed');
    if (this.listening !== null) throw new Error('One listener at a time');
    this.starting ??= this.startWorkers();
    await this.starting;
    if (this.closing) throw new Error('The router is closed');
    if (this.listening !== null) throw new Error('One listener at a time');
    this.listeners.push(listener);
    const address = await new Promise<AddressInfo>((resolve, reject) => {
      this.listening = { resolve, reject, waiting: this.workers.size, port: null };
      this.broadcast({ t: 'listen', listener });
    }).finally(() => {
      this.listening = null;
    });
    return address;
  }

  /** Reads the routes (every one, when the table can list them), then starts the workers with them. */
  private async startWorkers(): Promise<void> {
    await this.routes.refresh();
    if (this.closing) return;
    // Each worker accepts on the shared socket itself: connections never pass through the controller's event loop.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    cluster.setupPrimary({ ...workerEntry(), silent: false });
    for (let i = 0; i < this.options.workers; i++) this.fork();
  }

  private fork(): void {
    const id = this.nextWorker++;
    const worker = cluster.fork({ ROUTER_WORKER_ID: String(id) });
    this.workers.add(worker);
    worker.on('message', (message: FromWorker) => this.receive(worker, message));
    worker.on('error', () => undefined);
    worker.once('exit', (code, signal) => {
      this.workers.delete(worker);
      if (this.listening !== null) this.listenAnswer({ t: 'listening', kind: 'http', error: `router worker exited (${signal ?? code})` });
      if (this.closing) return;
      this.logger.error({ routerWorker: id, code, signal }, 'router worker exited; starting another');
      setTimeout(() => {
        if (!this.closing) this.fork();
      }, 500).unref();
    });
    worker.send({ t: 'start', settings: { ...this.settings, id } } satisfies ToWorker);
    this.sendTable(worker);
    // A worker replacing one listens where the others do, once it knows the routes.
    for (const listener of this.listeners) this.reply(worker, { t: 'listen', listener });
  }

  /**
   * Sends a new worker every route known, in pieces with the event loop free between them;
   * whatever else is for it meanwhile (route changes, answers, listeners) waits in order behind
   * them, so that nothing newer is overwritten by the table.
   */
  private sendTable(worker: Worker): void {
    const { listed, looked } = this.routes.snapshot();
    const pieces: ToWorker[] = [
      ...chunksOf(listed).map((entries): ToWorker => ({ t: 'routes', entries, listed: true })),
      ...chunksOf(looked).map((entries): ToWorker => ({ t: 'routes', entries })),
    ];
    const waiting: ToWorker[] = [];
    this.loading.set(worker, waiting);
    const next = (): void => {
      const piece = pieces.shift();
      if (piece !== undefined && !worker.isDead() && worker.isConnected()) {
        this.sendNow(worker, piece);
        setImmediate(next);
        return;
      }
      this.loading.delete(worker);
      for (const message of waiting) this.sendNow(worker, message);
    };
    next();
  }

  private receive(worker: Worker, message: FromWorker): void {
    switch (message.t) {
      case 'listening':
        this.listenAnswer(message);
        break;
      case 'resolve':
        this.routes.resolve(message.host, message.fresh).then(
          (route) => this.reply(worker, { t: 'resolved', id: message.id, route }),
          (error: unknown) => this.reply(worker, { t: 'resolved', id: message.id, error: error instanceof Error ? error.message : String(error) }),
        );
        break;
      case 'find':
        (this.options.certificates?.find(message.name) ?? Promise.resolve(null)).then(
          (certificate) => this.reply(worker, { t: 'found', id: message.id, certificate }),
          (error: unknown) => this.reply(worker, { t: 'found', id: message.id, error: error instanceof Error ? error.message : String(error) }),
        );
        break;
      case 'challenge':
        (this.options.challenges?.answer(message.host, message.token) ?? Promise.resolve(null)).then(
          (answer) => this.reply(worker, { t: 'answered', id: message.id, answer }),
          (error: unknown) => this.reply(worker, { t: 'answered', id: message.id, error: error instanceof Error ? error.message : String(error) }),
        );
        break;
      case 'observed':
        for (const [app, status, durationMs] of message.batch) this.options.observer?.request(app, status, durationMs);
        break;
      case 'synced':
        this.syncs.get(`${worker.id}:${message.id}`)?.();
        break;
      case 'closed':
        break;
    }
  }

  private listenAnswer(message: FromWorker & { t: 'listening' }): void {
    const listening = this.listening;
    if (listening === null) return;
    if (message.error !== undefined) {
      this.listening = null;
      this.listeners.pop();
      listening.reject(new Error(`Router worker could not listen: ${message.error}`));
      return;
    }
    listening.port ??= message.port ?? null;
    listening.waiting -= 1;
    if (listening.waiting <= 0) {
      const spec = this.listeners[this.listeners.length - 1];
      listening.resolve({ address: spec?.host ?? '', family: spec?.host.includes(':') === true ? 'IPv6' : 'IPv4', port: listening.port ?? 0 });
    }
  }

  private reply(worker: Worker, message: ToWorker): void {
    const waiting = this.loading.get(worker);
    if (waiting !== undefined) waiting.push(message);
    else this.sendNow(worker, message);
  }

  private sendNow(worker: Worker, message: ToWorker): void {
    if (!worker.isDead() && worker.isConnected()) worker.send(message);
  }

  private broadcast(message: ToWorker): void {
    for (const worker of this.workers) this.reply(worker, message);
  }
}
