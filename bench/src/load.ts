import autocannon from 'autocannon';

/** One kind of request, sent again and again. */
export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  /** `[<id>]` in the body is replaced by a unique id per request. */
  body?: string;
  /** Host headers sent in turn, one per request, instead of the one in `headers`. */
  hosts?: readonly string[];
}

/** How hard and how long to send it. */
export interface LoadShape {
  connections: number;
  /** Seconds; ignored when `amount` is given. */
  durationS?: number;
  /** Requests in all. */
  amount?: number;
  /** The TLS server name to send (SNI), for `https:` URLs. */
  servername?: string;
}

/** What one run measured. Latencies are in milliseconds, from the client's side. */
export interface LoadResult {
  connections: number;
  /** Answers with a 2xx status. */
  ok: number;
  /** Answers with another status, connection errors and timeouts. */
  failed: number;
  seconds: number;
  /** 2xx answers per second. */
  rps: number;
  p50: number;
  p99: number;
  mean: number;
  /**
   * CPU time the server process used per 2xx answer, in µs (throughput runs only; not the
   * database server's). On a shared machine it moves less than requests per second.
   */
  cpuUs?: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

/**
 * Runs autocannon against `baseUrl` and summarises the run. autocannon's own latency
 * histogram has a resolution of one millisecond, too coarse for sub-millisecond answers,
 * so the latency of every 2xx answer is collected here from its `response` events.
 */
export function runLoad(baseUrl: string, request: RequestSpec, shape: LoadShape): Promise<LoadResult> {
  const latencies: number[] = [];
  const hosts = request.hosts ?? [];
  let turn = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${baseUrl}${request.path}`,
        method: request.method,
        headers: request.headers ?? {},
        body: request.body,
        idReplacement: request.body?.includes('[<id>]') ?? false,
        connections: shape.connections,
        pipelining: 1,
        timeout: 30,
        ...(shape.servername === undefined ? {} : { servername: shape.servername }),
        ...(hosts.length === 0 ? {} : { requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, Host: hosts[turn++ % hosts.length] as string } }) }] }),
        ...(shape.amount !== undefined ? { amount: shape.amount } : { duration: shape.durationS ?? 5 }),
      },
      (error, result) => {
        if (error) {
          reject(error);
          return;
        }
        const seconds = (result.finish.getTime() - result.start.getTime()) / 1000;
        const sorted = Float64Array.from(latencies).sort();
        const sum = latencies.reduce((total, value) => total + value, 0);
        resolve({
          connections: shape.connections,
          ok: result['2xx'],
          failed: result.non2xx + result.errors + result.timeouts,
          seconds,
          rps: seconds > 0 ? result['2xx'] / seconds : 0,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          mean: latencies.length > 0 ? sum / latencies.length : Number.NaN,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}
