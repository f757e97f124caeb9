/*
 * Scale (`npm run bench -- scale`):
 *
 * 1. Routes: 10,000 apps (BENCH_SCALE_APPS), each with a domain of its own (`<app>.example.org`),
 *    bulk-loaded into a controller's SQLite database (bench/src/seed.ts); the router (bench/src/router-host.ts:
 *    RouterCluster over the controller's own route table, PlatformRouteTable, reading that
 *    database, which lists every route before the router serves; every app's web process is one
 *    small app process) is measured at 64 connections with every request for the same host name,
 *    with two host names in turn (each request on a connection names another host, as spread
 *    does, but the table's size plays no part), and with the requests spread over the 10,000
 *    host names in turn, taking turns for BENCH_SCALE_ROUNDS rounds each (default 7; the median
 *    of the rounds' ratios counts). Target: spread >= 0.95 of one. The router's CPU time per
 *    answer, the resident memory of its host process (the controller's part) and of its workers,
 *    its start-up time with every route read and the cost of one listing are printed.
 * 2. Adoption: a controller with SCHEDULER=docker runs 200 containers (BENCH_ADOPT_CONTAINERS;
 *    apps of 50 web processes of svc-test/busybox:1; the kernel's key quota is raised first when
 *    it is too low and the bench runs as root), is stopped (the containers keep running)
 *    and started again on the same data: the time from its start until it answers /healthz
 *    (it adopts the running containers before it listens), checked against the engine (the
 *    same container ids, none restarted) and its own log line. Target: within 10 s. Its RSS after.
 */
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LABELS, createEngine } from '@svc/scheduler-docker';
import { createDatabase } from '@svc/persistence-typeorm';
import { api } from './docker';
import { IMAGE, WEB_COMMAND, cleanEngine, dockerControllerEnv, loginAs } from './deploy-speed';
import type { LoadResult } from './load';
import { cpuSeconds, rssMiB } from './proxies';
import { freePort, startServer, type ServerProcess } from './processes';
import { loadClient, loadOf, prepareFiles, startApp, startRouterHost } from './router';
import type { ListingCost } from './router-host';
import { SqliteSeeder, seedDomains, seedUser } from './seed';

const APPS = Number(process.env.BENCH_SCALE_APPS ?? '10000');
const CONTAINERS = Number(process.env.BENCH_ADOPT_CONTAINERS ?? '200');
const PER_APP = 50;
/** Containers added per scale request while setting up (each request answers once they are up). */
const STEP = 25;
const DURATION_S = Number(process.env.BENCH_DURATION ?? '5');
/** Rounds of each case (one host name, every host name), taking turns. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_SCALE_ROUNDS ?? '7'));
/** Each app's domain is `<app>.example.org`: outside the platform domain (bench.test), so the route table looks it up among the domains. */
const DOMAIN_SUFFIX = '.example.org';

/** Router figures with one host name or many. */
export interface RoutesFigure {
  hosts: number;
  load: LoadResult;
  hostRssMiB: number;
  workersRssMiB: number[];
  /** Requests/s of every round (the figure is the median round's). */
  rounds: number[];
  /** CPU time the router's processes used per 1000 answers (all workers together, and the host process): less touched by the machine's load than requests/s. */
  cpuMsPer1000: { workers: number; host: number };
}

/** What the scale section measured. */
export interface ScaleResult {
  apps: number;
  workers: number;
  /** The router's start with every route to read (see RouterHost.startMs). */
  routerStartMs: number;
  listing: ListingCost | null;
  one: RoutesFigure;
  spread: RoutesFigure;
  /** spread / one throughput, the median of the rounds' ratios: the target is at least 0.95. */
  ratio: number;
  /** spread / one of each round. */
  ratios: number[];
  /** Two host names in turn: what a Host changing from request to request on a connection costs, whatever the table's size. */
  two: RoutesFigure;
  /** spread / two, the median of the rounds' ratios, and each round's: what the size of the table costs. */
  twoRatio: number;
  twoRatios: number[];
  /** restartMs: from the controller's start until it answered; adoptingMs: its own time adopting (listing, restoring, reaping). */
  adoption: { containers: number; restartMs: number; adoptingMs: number | null; restored: number | null; sameContainers: boolean; rssMiB: number } | null;
}

const loadAverage = (): string => loadavg().map((value) => value.toFixed(2)).join(' ');

/** The median of some numbers (the lower middle one of an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
}

/** The round with the median throughput, with every round's throughput in the order measured. */
export function medianFigure(figures: readonly RoutesFigure[]): RoutesFigure {
  const sorted = [...figures].sort((a, b) => a.load.rps - b.load.rps);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  if (median === undefined) throw new Error('no round measured');
  return { ...median, rounds: figures.map((figure) => figure.load.rps) };
}

/** How long the controller took to adopt its containers (`durationMs` of its log line about them), or null when absent. */
export function adoptionMs(output: string): number | null {
  const match = /"durationMs":(\d+)[^\n]*restored the apps' containers/.exec(output);
  return match ? Number(match[1]) : null;
}

/** The `restored` count of the controller's log line about its containers, or null when absent. */
export function restoredCount(output: string): number | null {
  const match = /"restored":(\d+)[^\n]*restored the apps' containers/.exec(output);
  return match ? Number(match[1]) : null;
}

async function benchRoutes(log: (line: string) => void): Promise<Omit<ScaleResult, 'adoption'>> {
  const workers = process.env.ROUTER_WORKERS === undefined || process.env.ROUTER_WORKERS === 'auto' ? availableParallelism() : Number(process.env.ROUTER_WORKERS);
  const client = loadClient();
  const send = loadOf(client);
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-scale-'));
  const dataDir = join(dir, 'data');
  await mkdir(dataDir, { recursive: true });
  const ids = Array.from({ length: APPS }, (_, i) => `scale-${String(i + 1).padStart(5, '0')}`);
  const migrator = await createDatabase({ dataDir });
  await migrator.migrate();
  await migrator.close();
  const seeder = new SqliteSeeder(join(dataDir, 'controller.sqlite'));
  seedUser(seeder, 'scale');
  await seeder.addApps('scale', ids);
  seedDomains(seeder, 'scale', ids, DOMAIN_SUFFIX);
  await seeder.close();
  log(`scale: ${APPS} apps with a domain each, load from ${client}; load average ${loadAverage()}`);
  const hosts = ids.map((id) => `${id}${DOMAIN_SUFFIX}`);
  const { cert, key } = await prepareFiles(dir, hosts[0] as string);
  const app = await startApp(dir);
  const router = await startRouterHost({ ROUTER_WORKERS: String(workers), APP_PORT: String(app.port), CERT: cert, KEY: key, DATA_DIR: dataDir });
  try {
    const url = `http://127.0.0.1:${router.port}`;
    const figure = async (over: string[]): Promise<RoutesFigure> => {
      const request = { method: 'GET' as const, path: '/', hosts: over };
      const [host = -1, ...workerPids] = await router.pids();
      const cpu = (pids: number[]): number => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
      const before = { host: cpu([host]), workers: cpu(workerPids) };
      const load = await send(url, request, { connections: 64, durationS: DURATION_S });
      const perThousand = (seconds: number): number => (load.ok > 0 ? (seconds * 1000 * 1000) / load.ok : Number.NaN);
      if (load.failed > 0) log(`scale: ${load.failed} failed requests over ${over.length} host names`);
      return {
        hosts: over.length,
        load,
        hostRssMiB: rssMiB(host),
        workersRssMiB: workerPids.map(rssMiB),
        rounds: [load.rps],
        cpuMsPer1000: { workers: perThousand(cpu(workerPids) - before.workers), host: perThousand(cpu([host]) - before.host) },
      };
    };
    // Warm-up: the JIT, and every host name's route asked for once.
    // Two host names in turn: every request on a connection names another host, as with all of them, but the table's size plays no part.
    const cases = { one: hosts.slice(0, 1), two: hosts.slice(0, 2), spread: hosts };
    for (const over of Object.values(cases)) await send(url, { method: 'GET', path: '/', hosts: over }, { connections: 16, durationS: 2 });
    // On a shared machine the load drifts: the cases take turns (in turning order); each one's median round is shown.
    const measured: Record<keyof typeof cases, RoutesFigure[]> = { one: [], two: [], spread: [] };
    const names = Object.keys(cases) as Array<keyof typeof cases>;
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < names.length; i++) {
        const which = names[(round + i) % names.length] as keyof typeof cases;
        const result = await figure(cases[which]);
        measured[which].push(result);
        log(`scale: round ${round + 1}, ${result.hosts} host name(s): ${Math.round(result.load.rps)} requests/s (${result.load.failed} failed)`);
      }
    }
    // Each round's cases ran back to back: their ratios are the least touched by the drift.
    const ratiosTo = (base: RoutesFigure[]): number[] => measured.spread.map((figure, i) => figure.load.rps / (base[i]?.load.rps ?? Number.NaN));
    const ratios = ratiosTo(measured.one);
    const twoRatios = ratiosTo(measured.two);
    return {
      apps: APPS,
      workers,
      routerStartMs: router.startMs,
      listing: router.listing,
      one: medianFigure(measured.one),
      two: medianFigure(measured.two),
      spread: medianFigure(measured.spread),
      ratio: median(ratios),
      ratios,
      twoRatio: median(twoRatios),
      twoRatios,
    };
  } finally {
    await router.stop();
    await app.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The kernel's key quota per user must exceed the containers: `runc` takes a key per container,
 * and with user-namespace remapping every container runs as the same remapped user, so at the
 * default 200 keys the 200th container fails to start (`unable to create session key: disk
 * quota exceeded`). As root the quota is raised (and said so); otherwise a warning is printed.
 */
async function ensureKeyQuota(containers: number, log: (line: string) => void): Promise<void> {
  const needKeys = Math.max(2000, containers * 2 + 100);
  const needBytes = needKeys * 100;
  const path = (name: string): string => `/proc/sys/kernel/keys/${name}`;
  const read = async (name: string): Promise<number | null> => Number((await readFile(path(name), 'utf8').catch(() => '')).trim()) || null;
  const keys = await read('maxkeys');
  const bytes = await read('maxbytes');
  if (keys === null || bytes === null || (keys >= needKeys && bytes >= needBytes)) return;
  if (process.getuid?.() !== 0) {
    log(`adoption: kernel.keys.maxkeys is ${keys} (maxbytes ${bytes}); containers past that may fail to start. As root: sysctl -w kernel.keys.maxkeys=${needKeys} kernel.keys.maxbytes=${needBytes}`);
    return;
  }
  if (keys < needKeys) await writeFile(path('maxkeys'), String(needKeys));
  if (bytes < needBytes) await writeFile(path('maxbytes'), String(needBytes));
  log(`adoption: raised kernel.keys.maxkeys ${keys} -> ${Math.max(keys, needKeys)} and kernel.keys.maxbytes ${bytes} -> ${Math.max(bytes, needBytes)} (runc needs a key per container)`);
}

async function benchAdoption(root: string, dockerHost: string, log: (line: string) => void): Promise<NonNullable<ScaleResult['adoption']>> {
  await ensureKeyQuota(CONTAINERS, log);
  const tag = `adopt-${process.pid.toString(36)}`;
  const env = { ...dockerControllerEnv(dockerHost, tag), LOG_LEVEL: 'info', SCALE_MAX_PER_TYPE: String(PER_APP), ROUTER_PORT: String(await freePort()) };
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-adopt-'));
  const main = join(root, 'packages', 'server', 'dist', 'main.js');
  const engine = createEngine(dockerHost);
  const running = async (): Promise<string[]> =>
    (await engine.listContainers({ filters: { label: [`${LABELS.instance}=${tag}`], status: ['running'] } })).map((c: { Id: string }) => c.Id).sort();
  let server: ServerProcess | null = null;
  try {
    server = await startServer('controller (docker)', main, { ...env, DATA_DIR: dataDir });
    const token = await loginAs(server.url, 'adoptbench');
    for (let n = 0; n * PER_APP < CONTAINERS; n++) {
      const app = `adopt-${n + 1}`;
      const count = Math.min(PER_APP, CONTAINERS - n * PER_APP);
      await api(server.url, 'POST', '/v1/apps/', token, { id: app });
      const build = await api(server.url, 'POST', `/v1/apps/${app}/builds/`, token, { image: IMAGE, procfile: { web: WEB_COMMAND } });
      if (build.status !== 201) throw new Error(`the deploy of ${app} answered ${build.status}: ${JSON.stringify(build.json)}`);
      // In steps: a scale request answers once its containers are up, and fetch gives up on an answer after 300 s.
      for (let web = Math.min(STEP, count); ; web = Math.min(web + STEP, count)) {
        const scaled = await api(server.url, 'POST', `/v1/apps/${app}/scale/`, token, { web });
        if (scaled.status !== 204) throw new Error(`scaling ${app} to ${web} answered ${scaled.status}: ${JSON.stringify(scaled.json)}`);
        if (web === count) break;
      }
      log(`adoption: ${app} runs ${count} containers (${(await running()).length} running)`);
    }
    const before = await running();
    if (before.length !== CONTAINERS) throw new Error(`${before.length} containers run, not ${CONTAINERS}`);
    await server.stop();
    server = null;
    log(`adoption: controller stopped, ${(await running()).length} containers still running; starting it again (load average ${loadAverage()})`);
    const began = performance.now();
    server = await startServer('controller (docker, restarted)', main, { ...env, DATA_DIR: dataDir });
    const restartMs = performance.now() - began;
    const after = await running();
    const output = server.postMortem();
    const restored = restoredCount(output);
    return { containers: CONTAINERS, restartMs, adoptingMs: adoptionMs(output), restored, sameContainers: after.join() === before.join(), rssMiB: server.memory().rssMiB };
  } catch (error) {
    if (server !== null) log(`adoption failed; the controller: ${server.postMortem()}`);
    throw error;
  } finally {
    await server?.stop();
    await cleanEngine(dockerHost, env);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Runs the section; adoption only with a Docker engine named. */
export async function benchScale(root: string, dockerHost: string | null, log: (line: string) => void): Promise<ScaleResult> {
  const routes = await benchRoutes(log);
  if (dockerHost === null) log('no Docker engine named (TEST_DOCKER_HOST or DOCKER_HOST): adoption is left out');
  return { ...routes, adoption: dockerHost === null ? null : await benchAdoption(root, dockerHost, log) };
}

const mib = (value: number): string => (Number.isFinite(value) ? value.toFixed(0) : '-');

/** The figures as lines of the report. */
export function scaleReport(result: ScaleResult): string {
  const line = (figure: RoutesFigure): string =>
    `  ${String(figure.hosts).padStart(6)} host name(s): ${figure.load.rps.toFixed(0).padStart(6)} requests/s (median; rounds ${figure.rounds.map((rps) => rps.toFixed(0)).join(', ')}), ` +
    `${figure.load.failed} failed; CPU ms per 1000 answers: workers ${mib(figure.cpuMsPer1000.workers)}, router host ${mib(figure.cpuMsPer1000.host)}; ` +
    `RSS MiB: router host (controller side) ${mib(figure.hostRssMiB)}, workers ${figure.workersRssMiB.map(mib).join(' + ')}`;
  const lines = [
    '',
    `Scale: the router (${result.workers} workers) with ${result.apps} routed apps (a domain each), 64 connections, plain; ` +
      `router start with every route read: ${(result.routerStartMs / 1000).toFixed(2)} s`,
    '',
    ...(result.listing === null
      ? []
      : [
          `  one listing of every route (${result.listing.routes} host names) in the host process: ${result.listing.coldMs.toFixed(0)} ms from the database, ` +
            `${result.listing.warmMs.toFixed(0)} ms from the names remembered (most refreshes, once a second)`,
        ]),
    '',
    line(result.one),
    line(result.two),
    line(result.spread),
  ];
  lines.push(
    `  spread / one: ${result.ratio.toFixed(2)} (median of the rounds' ratios ${result.ratios.map((ratio) => ratio.toFixed(2)).join(', ')})  [target >= 0.95: ${result.ratio >= 0.95 ? 'yes' : 'NO'}]`,
    `  spread / two: ${result.twoRatio.toFixed(2)} (rounds ${result.twoRatios.map((ratio) => ratio.toFixed(2)).join(', ')}): the table's size alone`,
    '',
  );
  const a = result.adoption;
  if (a !== null) {
    const holds = a.restartMs <= 10_000 && a.sameContainers;
    lines.push(
      `Adoption: controller restart with ${a.containers} running containers until it answers: ${(a.restartMs / 1000).toFixed(2)} s ` +
        `(of which adopting: ${a.adoptingMs === null ? '?' : (a.adoptingMs / 1000).toFixed(2)} s); ` +
        `restored ${a.restored ?? '?'}, same containers running: ${a.sameContainers ? 'yes' : 'no'}; controller RSS after ${mib(a.rssMiB)} MiB  ` +
        `[target <= 10 s, every container adopted: ${holds ? 'yes' : 'NO'}]`,
      '',
    );
  }
  return lines.join('\n');
}
