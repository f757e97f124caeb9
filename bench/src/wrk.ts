/*
 * wrk (Debian's package) as the load of the router section: a client in C that costs a few
 * microseconds of CPU per request, so that the proxies, not the client, decide the figures.
 * autocannon (load.ts), in Node.js, tops out near the rate of one proxy on a two-core machine
 * and hides the differences between them. The figures come from wrk's `done` hook, printed
 * as one JSON line.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadResult, LoadShape, RequestSpec } from './load';

/** The binary run; BENCH_WRK names another. */
export const WRK = process.env.BENCH_WRK ?? '/usr/bin/wrk';

// Latencies in wrk are microseconds; a status of 400 or more counts in errors.status.
const DONE_SCRIPT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\n{"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p99":%d,"mean":%f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean))
end
`;

/** What the script prints. */
interface WrkSummary {
  requests: number;
  durationUs: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50: number;
  p99: number;
  mean: number;
}

/** The summary line of wrk's output. @throws Error when there is none (wrk failed). */
export function parseWrkOutput(output: string): WrkSummary {
  const line = output
    .split('\n')
    .reverse()
    .find((candidate) => candidate.startsWith('{"requests":'));
  if (line === undefined) throw new Error(`wrk printed no summary: ${output.trim().slice(-400)}`);
  return JSON.parse(line) as WrkSummary;
}

/** A run's figures as the other clients give them (latencies in ms). */
export function loadResultOf(summary: WrkSummary, connections: number): LoadResult {
  const seconds = summary.durationUs / 1e6;
  const failed = summary.connect + summary.read + summary.write + summary.status + summary.timeout;
  const ok = Math.max(0, summary.requests - summary.status);
  return { connections, ok, failed, seconds, rps: seconds > 0 ? ok / seconds : 0, p50: summary.p50 / 1000, p99: summary.p99 / 1000, mean: summary.mean / 1000 };
}

/**
 * A script that sends `path` naming each of `hosts` in turn, one per request (the requests
 * are made once, at the start, so that each costs the client no more than one fixed request).
 */
export function hostsScript(path: string, hosts: readonly string[]): string {
  const quoted = (text: string): string => JSON.stringify(text);
  return [
    `local hosts = { ${hosts.map(quoted).join(', ')} }`,
    'local requests = {}',
    `for i, host in ipairs(hosts) do requests[i] = wrk.format("GET", ${quoted(path)}, { Host = host }) end`,
    'local count = #requests',
    'local turn = 0',
    'request = function()',
    '  turn = turn % count + 1',
    '  return requests[turn]',
    'end',
    '',
  ].join('\n');
}

/**
 * One run of wrk with one thread (as autocannon has one) against `baseUrl`: GET requests of
 * `request.path` with its headers (or naming each of `request.hosts` in turn), for
 * `shape.durationS` seconds. Over TLS wrk sends the URL's host as the server name (SNI).
 */
export async function runWrk(baseUrl: string, request: RequestSpec, shape: LoadShape): Promise<LoadResult> {
  if (request.method !== 'GET' || request.body !== undefined) throw new Error('wrk runs here only send GET requests');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-wrk-'));
  try {
    const script = join(dir, 'load.lua');
    await writeFile(script, (request.hosts === undefined ? '' : hostsScript(request.path, request.hosts)) + DONE_SCRIPT);
    const headers = Object.entries(request.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
    const args = ['-t1', `-c${shape.connections}`, `-d${shape.durationS ?? 5}s`, '--timeout', '30s', '-s', script, ...headers, `${baseUrl}${request.path}`];
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(WRK, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.on('error', reject);
      child.on('close', () => resolve(text));
    });
    return loadResultOf(parseWrkOutput(output), shape.connections);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
