/*
 * The router section of `npm run bench` (alone: `npm run bench -- router` or BENCH=router).
 *
 * One tiny node:http app process (plain and TLS listeners) is measured directly, through the
 * platform router (RouterCluster: its worker processes, keep-alive pools and in-memory routes,
 * as the controller runs it, fed by a fixed route table and a certificate store in this
 * process), and through nginx from Debian's packages configured as a plain reverse proxy with
 * keep-alive upstreams (skipped when not installed), at 1, 16 and 64 connections, small and
 * 100 KiB answers, plain and TLS. Then requests are counted while two deploys replace the app
 * process under 64 connections, the way the controller does it (new process up, old one out
 * of the routes and every worker told, then SIGTERM to the old one).
 *
 * Knobs: BENCH_DURATION seconds per run (default 5), ROUTER_WORKERS (default: one per core),
 * BENCH_NGINX (default /usr/sbin/nginx).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RouterCluster, type ResolvedRoute, type RouteTable, type ServedCertificate } from '@svc/router-http';
import { runLoad, type LoadResult } from './load';
import { freePort } from './processes';

const HOST = 'app.bench.test';
const DURATION_S = Number(process.env.BENCH_DURATION ?? '5');
const CONNECTIONS = [1, 16, 64] as const;
const SIZES = [
  { name: 'small', path: '/' },
  { name: '100 KiB', path: '/big' },
] as const;
const NGINX = process.env.BENCH_NGINX ?? '/usr/sbin/nginx';

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

/** A process of the app. */
interface AppProcess {
  port: number;
  tlsPort: number;
  child: ChildProcess;
  /** SIGTERM, then waits for it to exit. */
  stop(): Promise<void>;
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what} did not come up`);
}

async function startApp(dir: string): Promise<AppProcess> {
  const port = await freePort();
  const tlsPort = await freePort();
  const child = spawn(process.execPath, [join(dir, 'app.js')], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), TLS_PORT: String(tlsPort), CERT: join(dir, 'cert.pem'), KEY: join(dir, 'key.pem') },
    stdio: 'inherit',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => answers(port), 'the app');
  return {
    port,
    tlsPort,
    child,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A route table with one host name, changed by the deploy. */
class FixedRoutes implements RouteTable {
  route: ResolvedRoute;
  constructor(port: number) {
    this.route = { app: 'bench', targets: [{ host: '127.0.0.1', port }] };
  }
  async resolve(host: string): Promise<ResolvedRoute | null> {
    return host === HOST ? { app: this.route.app, targets: [...this.route.targets] } : null;
  }
}

async function startNginx(dir: string, app: AppProcess, workers: number): Promise<{ port: number; tlsPort: number; pids(): number[]; stop(): Promise<void> } | null> {
  if (!existsSync(NGINX)) {
    log(`${NGINX} is not installed: nginx is skipped`);
    return null;
  }
  const prefix = join(dir, 'nginx');
  await mkdir(join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const tlsPort = await freePort();
  const proxy = `proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto $scheme;`;
  const conf = `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes ${workers};
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/tmp/body; proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi; uwsgi_temp_path ${prefix}/tmp/uwsgi; scgi_temp_path ${prefix}/tmp/scgi;
  upstream app { server 127.0.0.1:${app.port}; keepalive 64; }
  server { listen 127.0.0.1:${port}; server_name ${HOST}; location / { ${proxy} } }
  server {
    listen 127.0.0.1:${tlsPort} ssl; server_name ${HOST};
    ssl_certificate ${dir}/cert.pem; ssl_certificate_key ${dir}/key.pem;
    location / { ${proxy} }
  }
}
`;
  await writeFile(join(prefix, 'nginx.conf'), conf);
  const child = spawn(NGINX, ['-p', prefix, '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'error.log')], { stdio: 'inherit' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitFor(() => answers(port), 'nginx');
  } catch (error) {
    child.kill('SIGKILL');
    log(`nginx did not start: ${await readFile(join(prefix, 'error.log'), 'utf8').catch(() => String(error))}`);
    return null;
  }
  return {
    port,
    tlsPort,
    pids: () => (child.pid === undefined ? [] : [child.pid, ...childrenOf(child.pid)]),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** One measured configuration. */
export interface RouterRow {
  size: string;
  tls: boolean;
  connections: number;
  direct: Measured;
  router: Measured;
  nginx: Measured | null;
}

/** What the router section measured. */
export interface RouterResult {
  workers: number;
  rows: RouterRow[];
  deploy: { deploys: number; ok: number; failed: number; rps: number };
  targets: Array<{ name: string; value: number; limit: string; holds: boolean }>;
}

/** CPU time (user and system) a process has used, in seconds; 0 when it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The children of a process (nginx's workers). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A run's figures with the CPU time the proxy (or app) processes used per 1000 answers. */
export interface Measured extends LoadResult {
  cpuMsPer1000: number;
}

async function measure(port: number, tls: boolean, path: string, connections: number, pids: () => number[]): Promise<Measured> {
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const spec = { method: 'GET' as const, path, headers: { Host: HOST } };
  const shape = { connections, ...(tls ? { servername: HOST } : {}) };
  await runLoad(url, spec, { ...shape, durationS: 1 });
  const watched = pids();
  const before = watched.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const result = await runLoad(url, spec, { ...shape, durationS: DURATION_S });
  const used = watched.reduce((sum, pid) => sum + cpuSeconds(pid), 0) - before;
  return { ...result, cpuMsPer1000: result.ok > 0 ? (used * 1000 * 1000) / result.ok : Number.NaN };
}

/** Runs the router section and returns its figures. */
export async function benchRouter(): Promise<RouterResult> {
  const workers = process.env.ROUTER_WORKERS === undefined || process.env.ROUTER_WORKERS === 'auto' ? availableParallelism() : Number(process.env.ROUTER_WORKERS);
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-router-'));
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=DNS:${HOST}`], {
    stdio: 'ignore',
  });
  if (made.status !== 0) throw new Error('openssl could not make the test certificate');
  const served: ServedCertificate = { certificate: await readFile(join(dir, 'cert.pem'), 'utf8'), key: await readFile(join(dir, 'key.pem'), 'utf8') };
  await writeFile(join(dir, 'app.js'), APP_JS);

  let app = await startApp(dir);
  const routes = new FixedRoutes(app.port);
  const router = new RouterCluster({
    workers,
    routes,
    certificates: { find: async (name) => (name === HOST ? served : null) },
    // Neither proxy writes an access log here: nginx has `access_log off`.
    logLevel: 'silent',
  });
  const routerPort = (await router.listen(0, '127.0.0.1')).port;
  const routerTlsPort = (await router.listenTls(0, '127.0.0.1')).port;
  const nginx = await startNginx(dir, app, workers);
  log(`app on ${app.port}/${app.tlsPort}, router (${workers} workers) on ${routerPort}/${routerTlsPort}${nginx ? `, nginx on ${nginx.port}/${nginx.tlsPort}` : ''}`);

  const rows: RouterRow[] = [];
  try {
    // Node's JIT needs some thousands of requests in each worker before it runs at speed (nginx needs none).
    log('warming the router up');
    for (const [port, tls] of [[routerPort, false], [routerTlsPort, true]] as const) {
      for (const path of ['/', '/big']) await runLoad(`${tls ? 'https' : 'http'}://127.0.0.1:${port}`, { method: 'GET', path, headers: { Host: HOST } }, { connections: 16, durationS: 3, ...(tls ? { servername: HOST } : {}) });
    }
    for (const size of SIZES) {
      for (const tls of [false, true]) {
        for (const connections of CONNECTIONS) {
          const what = `${size.name} ${tls ? 'TLS' : 'plain'} ${connections} conn`;
          log(`${what}: direct`);
          const appPids = (): number[] => (app.child.pid === undefined ? [] : [app.child.pid]);
          const direct = await measure(tls ? app.tlsPort : app.port, tls, size.path, connections, appPids);
          log(`${what}: router`);
          const viaRouter = await measure(tls ? routerTlsPort : routerPort, tls, size.path, connections, () => router.pids());
          let viaNginx: Measured | null = null;
          if (nginx !== null) {
            log(`${what}: nginx`);
            viaNginx = await measure(tls ? nginx.tlsPort : nginx.port, tls, size.path, connections, () => nginx.pids());
          }
          rows.push({ size: size.name, tls, connections, direct, router: viaRouter, nginx: viaNginx });
        }
      }
    }
    await nginx?.stop();

    // Deploys under load: the controller's order (new process up, old one out of the routes in every worker, then stopped).
    log('deploys under 64 connections');
    const deploys = 2;
    const load = runLoad(`http://127.0.0.1:${routerPort}`, { method: 'GET', path: '/', headers: { Host: HOST } }, { connections: 64, durationS: DURATION_S + 4 });
    for (let i = 0; i < deploys; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const next = await startApp(dir);
      routes.route = { app: 'bench', targets: [{ host: '127.0.0.1', port: app.port }, { host: '127.0.0.1', port: next.port }] };
      await router.routesChanged();
      await new Promise((resolve) => setTimeout(resolve, 300));
      routes.route = { app: 'bench', targets: [{ host: '127.0.0.1', port: next.port }] };
      await router.routesChanged();
      await app.stop();
      app = next;
    }
    const during = await load;
    const deploy = { deploys, ok: during.ok, failed: during.failed, rps: during.rps };

    const row = (size: string, tls: boolean, connections: number): RouterRow | undefined => rows.find((r) => r.size === size && r.tls === tls && r.connections === connections);
    const targets: RouterResult['targets'] = [];
    for (const tls of [false, true]) {
      const at64 = row('small', tls, 64);
      const at1 = row('small', tls, 1);
      const kind = tls ? 'TLS' : 'plain';
      if (at64 !== undefined) {
        const ratio = at64.router.rps / at64.direct.rps;
        targets.push({ name: `router / direct, small ${kind}, 64 conn`, value: ratio, limit: '>= 0.6', holds: ratio >= 0.6 });
        if (at64.nginx !== null) {
          const vsNginx = at64.router.rps / at64.nginx.rps;
          targets.push({ name: `router / nginx, small ${kind}, 64 conn`, value: vsNginx, limit: '>= 0.9', holds: vsNginx >= 0.9 });
        }
      }
      if (at1 !== undefined) {
        const added = at1.router.p50 - at1.direct.p50;
        targets.push({ name: `added p50 (ms), small ${kind}, 1 conn`, value: added, limit: '< 0.3', holds: added < 0.3 });
      }
    }
    targets.push({ name: `failed requests during ${deploys} deploys, 64 conn`, value: deploy.failed, limit: '= 0', holds: deploy.failed === 0 });
    return { workers, rows, deploy, targets };
  } finally {
    await nginx?.stop().catch(() => undefined);
    await router.close(1000);
    await app.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '-');

/** The router section as text: a table per size and the targets. */
export function routerReport(result: RouterResult, table: (head: string[], rows: string[][]) => string): string {
  const out = [
    `Router (${result.workers} router workers; nginx: ${result.rows.some((r) => r.nginx !== null) ? 'measured' : 'not installed'}), requests/s, p50 ms, and CPU ms used per 1000 answers by the app (direct) or the proxy's processes:`,
    '',
  ];
  out.push(
    table(
      ['answer', 'proto', 'conn', 'direct rps', 'p50', 'router rps', 'p50', 'nginx rps', 'p50', 'router/direct', 'router/nginx', 'CPU ms/1000: app', 'router', 'nginx'],
      result.rows.map((r) => [
        r.size,
        r.tls ? 'TLS' : 'plain',
        String(r.connections),
        fmt(r.direct.rps, 0),
        fmt(r.direct.p50),
        fmt(r.router.rps, 0),
        fmt(r.router.p50),
        r.nginx === null ? '-' : fmt(r.nginx.rps, 0),
        r.nginx === null ? '-' : fmt(r.nginx.p50),
        fmt(r.router.rps / r.direct.rps),
        r.nginx === null ? '-' : fmt(r.router.rps / r.nginx.rps),
        fmt(r.direct.cpuMsPer1000, 0),
        fmt(r.router.cpuMsPer1000, 0),
        r.nginx === null ? '-' : fmt(r.nginx.cpuMsPer1000, 0),
      ]),
    ),
  );
  out.push('', `During ${result.deploy.deploys} deploys at 64 connections: ${result.deploy.ok} answered, ${result.deploy.failed} failed (${fmt(result.deploy.rps, 0)} requests/s).`, '');
  out.push(table(['target', 'value', 'limit', 'holds'], result.targets.map((t) => [t.name, fmt(t.value), t.limit, t.holds ? 'yes' : 'NO'])));
  return `${out.join('\n')}\n`;
}
