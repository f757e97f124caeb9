import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CONTAINER_STATES, type DeliveryObserver, type DeployObserver, type DeployOutcome } from '@svc/core';

/** One answered API request, as the HTTP edge reports it. */
export interface RequestSample {
  method: string;
  /** The route pattern (`/v1/apps/:id/config`), never the raw path: its values are unbounded. */
  route: string;
  status: number;
  durationSeconds: number;
}

/** The database connection pool at one moment. */
export interface PoolStats {
  /** Connections the pool may open. */
  max: number;
  /** Connections open now. */
  open: number;
  /** Open connections not running anything. */
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

/** Where the gauges read at each scrape come from. */
export interface ControllerMetricsOptions {
  /** How many containers are recorded in each state (states left out count 0). */
  containers?: () => Promise<Partial<Record<string, number>>>;
  /** The database pool. */
  pool?: () => PoolStats;
  /** The controller's version, reported by `svc_build_info`. */
  version?: string;
  /**
   * Node.js process metrics of prom-client (event-loop lag, heap, garbage collection, CPU,
   * open handles, file descriptors). Default true.
   */
  processMetrics?: boolean;
}

/** Request latency buckets, in seconds: from a cached read to a deploy that starts processes. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Deploy duration buckets, in seconds: a config change to a slow image start. */
const DEPLOY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const DEPLOY_OUTCOMES: readonly DeployOutcome[] = ['succeeded', 'rejected', 'failed'];

/**
 * The controller's metrics in one registry of its own (several controllers in one process,
 * as in tests, do not mix): API requests by route and status, deploys by outcome, containers
 * by state, the database pool and the Node.js process. Also the core's DeployObserver.
 */
export class ControllerMetrics implements DeployObserver, DeliveryObserver {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly requestDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly deploys: Counter<'outcome'>;
  private readonly deployDuration: Histogram<'outcome'>;
  private readonly deploysInProgress: Gauge;
  private readonly deliveries: Counter<'outcome'>;

  constructor(options: ControllerMetricsOptions = {}) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'svc_http_requests_total',
      help: 'API requests answered, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.requestDuration = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Time from receiving an API request to the end of its answer, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.deliveries = new Counter({
      name: 'svc_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome: delivered, retrying (failed, to be tried again) or failed (given up).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['delivered', 'retrying', 'failed']) this.deliveries.inc({ outcome }, 0);
    this.deploys = new Counter({
      name: 'svc_deploys_total',
      help: 'Deploys (config changes, builds, pushes, rollbacks) that ended, by outcome: succeeded, rejected (refused request) or failed (scheduler, database or unexpected error).',
      labelNames: ['outcome'],
      registers,
    });
    this.deployDuration = new Histogram({
      name: 'svc_deploy_duration_seconds',
      help: 'How long deploys took, from the start of the transaction to commit (new containers up) or failure, by outcome.',
      labelNames: ['outcome'],
      buckets: DEPLOY_BUCKETS,
      registers,
    });
    this.deploysInProgress = new Gauge({ name: 'svc_deploys_in_progress', help: 'Deploys running now.', registers });
    // Every outcome is present from the start, so that rate() and alerts see a zero, not nothing.
    for (const outcome of DEPLOY_OUTCOMES) this.deploys.inc({ outcome }, 0);

    const containers = options.containers;
    if (containers !== undefined) {
      new Gauge({
        name: 'svc_containers',
        help: 'Containers recorded by the controller, by state (read from the database at each scrape).',
        labelNames: ['state'],
        registers,
        async collect() {
          this.reset();
          let counts: Partial<Record<string, number>>;
          try {
            counts = await containers();
          } catch {
            // A database that does not answer gives no figure rather than a stale one; /readyz says why.
            return;
          }
          for (const state of new Set<string>([...CONTAINER_STATES, ...Object.keys(counts)])) this.set({ state }, counts[state] ?? 0);
        },
      });
    }

    const pool = options.pool;
    if (pool !== undefined) {
      const poolGauge = (name: string, help: string, read: (stats: PoolStats) => number): void => {
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(read(pool()));
          },
        });
      };
      poolGauge('svc_db_pool_max_connections', 'Connections the database pool may open.', (s) => s.max);
      poolGauge('svc_db_pool_open_connections', 'Database connections open now.', (s) => s.open);
      poolGauge('svc_db_pool_idle_connections', 'Open database connections not running anything.', (s) => s.idle);
      poolGauge('svc_db_pool_waiting_clients', 'Callers waiting for a database connection.', (s) => s.waiting);
    }

    if (options.version !== undefined) {
      new Gauge({ name: 'svc_build_info', help: 'The controller version (always 1).', labelNames: ['version'], registers }).set({ version: options.version }, 1);
    }
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Counts and times one answered API request. */
  observeRequest(sample: RequestSample): void {
    const labels = { method: sample.method, route: sample.route, status: String(sample.status) };
    this.requests.inc(labels);
    this.requestDuration.observe(labels, sample.durationSeconds);
  }

  /** The core's DeployObserver: counts the deploy and times it. */
  deployStarted(_app: string): (outcome: DeployOutcome) => void {
    // No per-app label: apps are created by tenants, and each would be a series of its own.
    this.deploysInProgress.inc();
    const stop = this.deployDuration.startTimer();
    return (outcome) => {
      this.deploysInProgress.dec();
      stop({ outcome });
      this.deploys.inc({ outcome });
    };
  }

  /** The core's DeliveryObserver: counts one webhook delivery attempt by its outcome. */
  attempted(outcome: 'delivered' | 'retrying' | 'failed'): void {
    this.deliveries.inc({ outcome });
  }

  /** The content type of `render()`'s text. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the Prometheus text exposition format (gauges read now). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
