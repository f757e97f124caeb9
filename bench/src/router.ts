/*
 * The router section of `npm run bench` (alone: `npm run bench -- router` or BENCH=router).
 *
 * One tiny node:http app process (plain and TLS listeners) is measured directly, through the
 * platform router (RouterCluster in a process of its own, bench/src/router-host.ts: its worker
 * processes, keep-alive pools and in-memory routes, as the controller runs it), through HAProxy
 * and nginx from Debian's packages (bench/src/proxies.ts, configurations in
 * bench/proxies/: as many workers as the router, keep-alive to the app, no access log; the
 * packages are installed when missing), and through the floor of any relay on Node's net
 * module (PIPE_JS: connections piped, no HTTP), at 1, 16 and 64 connections, plain and TLS (the same
 * certificate for all, each with its default protocols and ciphers), small answers (and
 * 100 KiB ones with BENCH_ROUTER_SIZES=small,100k). For each: requests/s, the ratio to the
 * direct figure and the CPU time of all the proxy's processes per 1000 answers. Then requests
 * are counted while two deploys replace the app process under 64 connections, the way the
 * controller does it (new process up, old one out of the routes and every worker told, then
 * SIGTERM to the old one).
 *
 * The load comes from wrk (bench/src/wrk.ts), or autocannon with BENCH_ROUTER_CLIENT=autocannon.
 *
 * Knobs: BENCH_DURATION seconds per run (default 5), ROUTER_WORKERS (default: one per core),
 * BENCH_ROUTER_SIZES (default `small`), BENCH_HAPROXY, BENCH_NGINX, BENCH_WRK (the binaries).
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, type LoadResult } from './load';
import { answers, cpuSeconds, ensurePackage, startProxy, treeOf, waitFor, type ProxyKind, type RunningProxy } from './proxies';
import { freePort } from './processes';
import type { HostMessage, HostRequest, ListingCost } from './router-host';
import { runWrk, WRK } from './wrk';

export const HOST = 'app.bench.test';
const DURATION_S = Number(process.env.BENCH_DURATION ?? '5');
const CONNECTIONS = [1, 16, 64] as const;
const ALL_SIZES = [
  { name: 'small', path: '/' },
  { name: '100k', path: '/big' },
] as const;
const SIZES = ALL_SIZES.filter((size) => (process.env.BENCH_ROUTER_SIZES ?? 'small').split(',').includes(size.name));
const PROXIES: readonly ProxyKind[] = ['haproxy', 'nginx'];

const log = (line: string): void => {
  process.stderr.write(`[bench:router] ${line}\n`);
};

const APP_JS = `
const http = require('http');
const https = require('https');
const fs = require('fs');
const small = Buffer.from('hello world\\n');
const big = Buffer.alloc(100 * 1024, 'x');
const handler = (req, res) => {
  const body = req.url === '/big' ? big : small;
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
  res.end(body);
};
const plain = http.createServer(handler).listen(Number(process.env.PORT), '127.0.0.1');
const secure = https.createServer({ cert: fs.readFileSync(process.env.CERT), key: fs.readFileSync(process.env.KEY) }, handler).listen(Number(process.env.TLS_PORT), '127.0.0.1');
process.on('SIGTERM', () => { secure.close(); plain.close(() => process.exit(0)); });
`;

/**
 * The floor of any relay on Node's net module, measured beside the router: each client
 * connection piped to a connection of its own to the app (`client.pipe(app)`, and back), with
 * no HTTP parsing, routing, pooling or limits at all; as many worker processes as the router,
 * sharing the listening sockets as its workers do. Over TLS it ends TLS and pipes plain.
 */
const PIPE_JS = `
const cluster = require('cluster');
const net = require('net');
const tls = require('tls');
const fs = require('fs');
cluster.schedulingPolicy = cluster.SCHED_NONE;
if (cluster.isPrimary) {
  const workers = [];
  for (let i = 0; i < Number(process.env.WORKERS); i++) workers.push(cluster.fork());
  process.on('SIGTERM', () => { for (const worker of workers) worker.kill(); process.exit(0); });
} else {
  const app = { host: '127.0.0.1', port: Number(process.env.APP_PORT), noDelay: true };
  const relay = (client) => {
    client.setNoDelay(true);
    const upstream = net.connect(app);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  };
  net.createServer(relay).listen(Number(process.env.PORT), '127.0.0.1');
  tls.createServer({ cert: fs.readFileSync(process.env.CERT), key: fs.readFileSync(process.env.KEY) }, relay).listen(Number(process.env.TLS_PORT), '127.0.0.1');
}
`;

/** A process of the app. */
export interface AppProcess {
  port: number;
  tlsPort: number;
  child: ChildProcess;
  /** SIGTERM, then waits for it to exit. */
  stop(): Promise<void>;
}

/** Writes a self-signed certificate for `host` (cert.pem, key.pem), the app (app.js) and the pipe relay (pipe.js) into `dir`. */
export async function prepareFiles(dir: string, host: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`], { stdio: 'ignore' });
  if (made.status !== 0) throw new Error('openssl could not make the test certificate');
  await writeFile(join(dir, 'app.js'), APP_JS);
  await writeFile(join(dir, 'pipe.js'), PIPE_JS);
  return { cert, key };
}

/** Starts a script written by prepareFiles (its plain and TLS ports free ones), once its plain port answers. */
async function startScript(dir: string, script: string, env: Record<string, string>, what: string): Promise<AppProcess> {
  const port = await freePort();
  const tlsPort = await freePort();
  const child = spawn(process.execPath, [join(dir, script)], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), TLS_PORT: String(tlsPort), CERT: join(dir, 'cert.pem'), KEY: join(dir, 'key.pem'), ...env },
    stdio: 'inherit',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => answers(port), what);
  return {
    port,
    tlsPort,
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Starts the app written by prepareFiles. */
export function startApp(dir: string): Promise<AppProcess> {
  return startScript(dir, 'app.js', {}, 'the app');
}

/** Starts the pipe relay written by prepareFiles in front of the app at `appPort`, with `workers` processes. */
export function startPipe(dir: string, appPort: number, workers: number): Promise<AppProcess> {
  return startScript(dir, 'pipe.js', { APP_PORT: String(appPort), WORKERS: String(workers) }, 'the pipe relay');
}

/** The router in a process of its own (bench/src/router-host.ts). */
export interface RouterHost {
  port: number;
  tlsPort: number;
  /** From creating the router until it listened (routes read, workers started and sent them). */
  startMs: number;
  /** The cost of one listing of every route, with a database (DATA_DIR). */
  listing: ListingCost | null;
  /** The host process and its workers. */
  pids(): Promise<number[]>;
  /** Routes the one host name to these ports and waits until every worker knows. */
  setTargets(ports: number[]): Promise<void>;
  stop(): Promise<void>;
}

/** Starts bench/dist/router-host.js with this environment (see there). */
export async function startRouterHost(env: Record<string, string>): Promise<RouterHost> {
  const child = fork(join(__dirname, 'router-host.js'), [], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const next = <T extends HostMessage['t']>(t: T): Promise<Extract<HostMessage, { t: T }>> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: HostMessage): void => {
        if (message.t !== t) return;
        child.off('message', onMessage);
        resolve(message as Extract<HostMessage, { t: T }>);
      };
      child.on('message', onMessage);
      void exited.then(() => reject(new Error('the router host exited')));
    });
  const ask = (request: HostRequest): void => {
    child.send(request);
  };
  const ready = await next('ready');
  return {
    port: ready.port,
    tlsPort: ready.tlsPort,
    startMs: ready.startMs,
    listing: ready.listing,
    pids: async () => {
      const answer = next('pids');
      ask({ t: 'pids' });
      return (await answer).pids;
    },
    setTargets: async (ports) => {
      const done = next('done');
      ask({ t: 'targets', ports });
      await done;
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The load of one run, from the client chosen. */
export const loadOf = (client: LoadClient): typeof runLoad => (client === 'wrk' ? runWrk : runLoad);

/** What sends the load of the router and scale sections. */
export type LoadClient = 'wrk' | 'autocannon';

/**
 * The load's client: wrk (Debian's package, installed when missing) unless
 * BENCH_ROUTER_CLIENT=autocannon. autocannon, in Node.js, is slower than the proxies it
 * measures here: its figures show the client's limit more than the proxies' differences.
 */
export function loadClient(): LoadClient {
  if (process.env.BENCH_ROUTER_CLIENT === 'autocannon') return 'autocannon';
  if (ensurePackage('wrk', WRK, log)) return 'wrk';
  log('wrk is missing: the load comes from autocannon, which is slower than the proxies it measures');
  return 'autocannon';
}

/** A run's figures with the CPU time the proxy's (or app's) processes used per 1000 answers. */
export interface Measured extends LoadResult {
  cpuMsPer1000: number;
}

/** Who answered: the app itself, or a proxy in front of it (`node-pipe`: the floor of a relay on Node's net module, PIPE_JS). */
export type Side = 'direct' | 'router' | 'node-pipe' | ProxyKind;

/** One measured configuration. */
export interface RouterRow {
  size: string;
  tls: boolean;
  connections: number;
  figures: Partial<Record<Side, Measured>>;
}

/** What the router section measured. */
export interface RouterResult {
  workers: number;
  client: LoadClient;
  proxies: ProxyKind[];
  rows: RouterRow[];
  deploy: { deploys: number; ok: number; failed: number; rps: number };
  targets: Array<{ name: string; value: number; limit: string; holds: boolean }>;
}

/** One run of `durationS` from `client` after a second of warm-up, with the CPU time `pids` used during it. */
export async function measure(port: number, tls: boolean, path: string, connections: number, pids: number[], client: LoadClient, durationS = DURATION_S): Promise<Measured> {
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const spec = { method: 'GET' as const, path, headers: { Host: HOST } };
  const shape = { connections, ...(tls ? { servername: HOST } : {}) };
  const load = loadOf(client);
  await load(url, spec, { ...shape, durationS: 1 });
  const before = pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const result = await load(url, spec, { ...shape, durationS });
  const used = pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0) - before;
  return { ...result, cpuMsPer1000: result.ok > 0 ? (used * 1000 * 1000) / result.ok : Number.NaN };
}

/** The faster of the proxies the router is compared with, in a row; null when none ran. */
export function fasterProxy(row: RouterRow): { kind: ProxyKind; rps: number } | null {
  let best: { kind: ProxyKind; rps: number } | null = null;
  for (const kind of PROXIES) {
    const rps = row.figures[kind]?.rps;
    if (rps !== undefined && (best === null || rps > best.rps)) best = { kind, rps };
  }
  return best;
}

/** The issue's targets: the router at least as fast as the faster of HAProxy and nginx (small answers). */
export function routerTargets(rows: RouterRow[], deploy: RouterResult['deploy']): RouterResult['targets'] {
  const targets: RouterResult['targets'] = [];
  for (const row of rows.filter((r) => r.size === 'small')) {
    const best = fasterProxy(row);
    const router = row.figures.router?.rps;
    if (best === null || router === undefined) continue;
    const ratio = router / best.rps;
    const kind = row.tls ? 'TLS' : 'plain';
    targets.push({ name: `router / faster of HAProxy and nginx (${best.kind}), ${kind}, ${row.connections} conn`, value: ratio, limit: '>= 1', holds: ratio >= 1 });
  }
  targets.push({ name: `failed requests during ${deploy.deploys} deploys, 64 conn`, value: deploy.failed, limit: '= 0', holds: deploy.failed === 0 });
  return targets;
}

/** Runs the router section and returns its figures. */
export async function benchRouter(): Promise<RouterResult> {
  const workers = process.env.ROUTER_WORKERS === undefined || process.env.ROUTER_WORKERS === 'auto' ? availableParallelism() : Number(process.env.ROUTER_WORKERS);
  const client = loadClient();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-router-'));
  const { cert, key } = await prepareFiles(dir, HOST);
  let app = await startApp(dir);
  const router = await startRouterHost({ ROUTER_WORKERS: String(workers), APP_PORT: String(app.port), CERT: cert, KEY: key, ROUTE_HOST: HOST });
  const proxies: RunningProxy[] = [];
  let pipe: AppProcess | null = null;
  try {
    for (const kind of PROXIES) {
      const proxy = await startProxy(kind, dir, { appPort: app.port, host: HOST, workers, cert, key }, log);
      if (proxy !== null) proxies.push(proxy);
    }
    pipe = await startPipe(dir, app.port, workers);
    const pipePids = treeOf(pipe.child.pid);
    log(`load from ${client}; app on ${app.port}/${app.tlsPort}, router (${workers} workers) on ${router.port}/${router.tlsPort}${proxies.map((p) => `, ${p.kind} on ${p.port}/${p.tlsPort}`).join('')}`);
    // Node's JIT needs some thousands of requests in each worker before it runs at speed (the others need none).
    log('warming the router up');
    for (const tls of [false, true]) {
      for (const size of SIZES) await measure(tls ? router.tlsPort : router.port, tls, size.path, 16, [], client, 2);
    }
    const rows: RouterRow[] = [];
    for (const size of SIZES) {
      for (const tls of [false, true]) {
        for (const connections of CONNECTIONS) {
          const what = `${size.name} ${tls ? 'TLS' : 'plain'} ${connections} conn`;
          const figures: RouterRow['figures'] = {};
          const sides: Array<{ side: Side; port: number; pids: () => Promise<number[]> }> = [
            { side: 'direct', port: tls ? app.tlsPort : app.port, pids: async () => treeOf(app.child.pid) },
            { side: 'router', port: tls ? router.tlsPort : router.port, pids: () => router.pids() },
            { side: 'node-pipe', port: tls ? pipe.tlsPort : pipe.port, pids: async () => pipePids },
            ...proxies.map((proxy) => ({ side: proxy.kind, port: tls ? proxy.tlsPort : proxy.port, pids: async () => proxy.pids() })),
          ];
          for (const { side, port, pids } of sides) {
            figures[side] = await measure(port, tls, size.path, connections, await pids(), client);
            log(`${what}: ${side} ${Math.round(figures[side]?.rps ?? 0)} requests/s`);
          }
          rows.push({ size: size.name, tls, connections, figures });
        }
      }
    }
    for (const proxy of proxies.splice(0)) await proxy.stop();
    await pipe.stop();

    // Deploys under load: the controller's order (new process up, old one out of the routes in every worker, then stopped).
    log('deploys under 64 connections');
    const deploys = 2;
    const load = loadOf(client)(`http://127.0.0.1:${router.port}`, { method: 'GET', path: '/', headers: { Host: HOST } }, { connections: 64, durationS: DURATION_S + 4 });
    for (let i = 0; i < deploys; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const next = await startApp(dir);
      await router.setTargets([app.port, next.port]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await router.setTargets([next.port]);
      await app.stop();
      app = next;
    }
    const during = await load;
    const deploy = { deploys, ok: during.ok, failed: during.failed, rps: during.rps };
    return { workers, client, proxies: PROXIES.filter((kind) => rows.some((row) => row.figures[kind] !== undefined)), rows, deploy, targets: routerTargets(rows, deploy) };
  } finally {
    for (const proxy of proxies) await proxy.stop().catch(() => undefined);
    await pipe?.stop().catch(() => undefined);
    await router.stop();
    await app.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (value: number | undefined, digits = 2): string => (value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : '-');

/** The router section as text: a table and the targets. */
export function routerReport(result: RouterResult, table: (head: string[], rows: string[][]) => string): string {
  const sides: Side[] = ['direct', 'router', ...(result.rows.some((row) => row.figures['node-pipe'] !== undefined) ? (['node-pipe'] as const) : []), ...result.proxies];
  const out = [
    `Router (load from ${result.client}; ${result.workers} router workers, ${result.proxies.map((kind) => `${kind} with ${result.workers} ${kind === 'nginx' ? 'workers' : 'threads'}`).join(', ') || 'no other proxy installed'}): requests/s, ` +
      'its ratio to the direct figure, and CPU ms used per 1000 answers by the app (direct) or all the proxy\'s processes ' +
      '(node-pipe: the floor of any relay on Node\'s net module, each connection piped to one of its own to the app, no HTTP parsing):',
    '',
  ];
  const head = ['answer', 'proto', 'conn'];
  for (const side of sides) head.push(`${side} rps`, ...(side === 'direct' ? [] : ['/direct']), 'CPU');
  head.push('router / faster');
  out.push(
    table(
      head,
      result.rows.map((row) => {
        const direct = row.figures.direct?.rps ?? Number.NaN;
        const cells = [row.size, row.tls ? 'TLS' : 'plain', String(row.connections)];
        for (const side of sides) {
          const figure = row.figures[side];
          cells.push(fmt(figure?.rps, 0), ...(side === 'direct' ? [] : [fmt((figure?.rps ?? Number.NaN) / direct)]), fmt(figure?.cpuMsPer1000, 0));
        }
        const best = fasterProxy(row);
        cells.push(best === null ? '-' : fmt((row.figures.router?.rps ?? Number.NaN) / best.rps));
        return cells;
      }),
    ),
  );
  out.push('', `During ${result.deploy.deploys} deploys at 64 connections: ${result.deploy.ok} answered, ${result.deploy.failed} failed (${fmt(result.deploy.rps, 0)} requests/s).`, '');
  out.push(table(['target', 'value', 'limit', 'holds'], result.targets.map((t) => [t.name, fmt(t.value), t.limit, t.holds ? 'yes' : 'NO'])));
  return `${out.join('\n')}\n`;
}
