import { Counter, Histogram, type Registry } from 'prom-client';

/** One request the router answered (or failed to). */
export interface RoutedRequestSample {
  /** The app the host name belongs to; null when it names no app. */
  app: string | null;
  /** The status sent to the client (502/503/504 when no process answered). */
  status: number;
  durationSeconds: number;
}

/** Records the router's requests; hand its `observe` to the router's observer hook. */
export interface RouterMetrics {
  observe(sample: RoutedRequestSample): void;
}

const ROUTER_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** `200` → `2xx`: per app, a status class keeps the series few. */
function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}

/**
 * Adds the router's metrics to `registry` (e.g. `ControllerMetrics.registry`): app traffic
 * by app and status class, and its latency by app. One series per app: apps are bounded by
 * what the platform lets tenants create, unlike paths or host names, which are not.
 */
export function createRouterMetrics(registry: Registry): RouterMetrics {
  const registers = [registry];
  const requests = new Counter({
    name: 'svc_router_requests_total',
    help: 'App requests answered by the router, by app ("" for host names of no app) and status class.',
    labelNames: ['app', 'status_class'],
    registers,
  });
  const duration = new Histogram({
    name: 'svc_router_request_duration_seconds',
    help: 'Time from the router receiving an app request to the end of its answer, by app.',
    labelNames: ['app'],
    buckets: ROUTER_BUCKETS,
    registers,
  });
  return {
    observe(sample) {
      const app = sample.app ?? '';
      requests.inc({ app, status_class: statusClass(sample.status) });
      duration.observe({ app }, sample.durationSeconds);
    },
  };
}
