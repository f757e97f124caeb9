/*
 * `npm run bench`: measures the controller against a bare baseline (bench/src/baseline.ts)
 * on SQLite and, when DATABASE_URL is set, on PostgreSQL (in a scratch database created on
 * that server and dropped at the end). Prints tables and writes bench/results.json.
 *
 * Knobs (environment): BENCH_DURATION seconds per throughput run (default 5),
 * BENCH_GROWTH_REQUESTS requests per latency measurement (default 1000),
 * BENCH_DATABASES (default `sqlite,postgres`); for quicker partial runs, BENCH_SIZES (default
 * `100,10000,100000`) and BENCH_ENDPOINTS (parts of the names of the throughput endpoints to run);
 * BENCH_SECTIONS (default `throughput,deploy-isolation,docker,router,push,deploy,scale`; see
 * bench/src/deploy-isolation.ts, docker.ts, router.ts, push.ts, deploy-speed.ts and scale.ts).
 * `npm run bench -- router` (or `push`, `deploy`, `scale`, or several) runs those sections alone.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { createDatabase } from '@svc/persistence-typeorm';
import { benchDeployIsolation, isolationReport, type IsolationResult } from './deploy-isolation';
import { runLoad, type LoadResult, type RequestSpec } from './load';
import { describeMachine } from './machine';
import { startServer, type ServerProcess } from './processes';
import { benchDeploySpeed, deploySpeedReport, type DeploySpeedResult } from './deploy-speed';
import { benchDocker, dockerReport, type DockerResult } from './docker';
import { benchPush, pushReport, type PushResult } from './push';
import { pushApps } from './push-apps';
import { benchRouter, routerReport, type RouterResult } from './router';
import { benchScale, scaleReport, type ScaleResult } from './scale';
import { evaluate, fmt, report, table, type ConfigRow, type DatabaseResult, type GrowthRow, type Kind, type Pair, type Side, type ThroughputRow } from './report';
import { createScratchDatabase, PostgresSeeder, SqliteSeeder, type ScratchDatabase, type Seeder } from './seed';

const ROOT = resolve(__dirname, '..', '..');
const CONTROLLER_MAIN = join(ROOT, 'packages', 'server', 'dist', 'main.js');
const BASELINE_MAIN = join(__dirname, 'baseline.js');
const RESULTS_FILE = join(ROOT, 'bench', 'results.json');

const DURATION_S = Number(process.env.BENCH_DURATION ?? '5');
const WARMUP_S = 1;
const GROWTH_REQUESTS = Number(process.env.BENCH_GROWTH_REQUESTS ?? '1000');
const CONCURRENCY = [1, 16, 64] as const;
const SIZES = (process.env.BENCH_SIZES ?? '100,10000,100000').split(',').map(Number);
const LARGEST = SIZES[SIZES.length - 1] ?? 0;
const LARGEST_TEXT = LARGEST.toLocaleString('en-US');
/** Logins are slow by design (scrypt): their runs last longer, to count enough of them. */
const LOGIN_DURATION_S = Math.max(DURATION_S, 10);
/** Only the throughput endpoints whose name contains one of these (comma-separated); all by default. */
const ENDPOINTS = process.env.BENCH_ENDPOINTS?.split(',') ?? null;
const POOL_SIZE = 10;
/**
 * With BENCH_CPU_PROFILE=<directory>, the controller runs under V8's sampling profiler and
 * writes a `.cpuprofile` there when it stops (one per database run): where its time goes.
 */
const PROFILE_ARGS = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', resolve(process.env.BENCH_CPU_PROFILE)] : [];
const PASSWORD = 'bench-password-1';
const SECRET_KEY = 'bench-secret-key-bench-secret-key-0123456789';

/** Apps every stage has besides the generic ones: owned by the bench user, and shared with it. */
const OWN_SPECIALS = ['hist', 'cfg-load', 'cfg-small', 'cfg-large'];
const SHARED = Array.from({ length: 10 }, (_, i) => `shared-${String(i + 1).padStart(2, '0')}`);
const GENERIC = (n: number): string => `app-${String(n).padStart(6, '0')}`;

const log = (line: string): void => {
  process.stderr.write(`[bench] ${line}\n`);
};

/** What to undo if the run is interrupted: servers to stop, a scratch database to drop. */
const cleanups = new Set<() => Promise<void>>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the servers and dropping the scratch database`);
    void Promise.allSettled([...cleanups].map((cleanup) => cleanup())).then(() => process.exit(130));
  });
}

async function call(url: string, path: string, body: unknown, token?: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `token ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`POST ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function setUpUsers(url: string): Promise<{ bench: string }> {
  for (const username of ['admin', 'bench', 'other']) {
    await call(url, '/v1/auth/register/', { username, password: PASSWORD, email: `${username}@example.com` });
  }
  const { token } = await call(url, '/v1/auth/login/', { username: 'bench', password: PASSWORD });
  return { bench: token as string };
}

// ---- measuring -----------------------------------------------------------------------

/** Servers restarted during the run, and why: printed with the figures. */
const restarts: string[] = [];

/**
 * Runs `measure`. Should the server have been stopped from outside meanwhile (on a shared
 * machine another program may signal a process id it once knew), it is restarted on the same
 * data and measured again, once; the restart is reported with the figures. Any other
 * failure ends the run.
 */
async function measured(server: ServerProcess, what: string, measure: () => Promise<LoadResult>): Promise<LoadResult> {
  const result = await measure();
  if (result.failed === 0) return result;
  if (server.stoppedFromOutside()) {
    const note = `${server.name} stopped from outside during ${what} (${server.postMortem().split('\n')[0] ?? ''}); restarted and measured again`;
    log(note);
    restarts.push(note);
    await server.restart();
    const again = await measure();
    if (again.failed === 0) return again;
  }
  throw new Error(`${server.name} ${what}: ${result.failed} failed requests; ${server.postMortem()}`);
}

function latency(server: ServerProcess, request: RequestSpec): Promise<LoadResult> {
  return measured(server, `${request.method} ${request.path} (latency)`, async () => {
    await runLoad(server.url, request, { connections: 1, amount: Math.max(50, Math.floor(GROWTH_REQUESTS / 5)) });
    return runLoad(server.url, request, { connections: 1, amount: GROWTH_REQUESTS });
  });
}

async function pairOf(servers: Record<Side, ServerProcess>, measure: (server: ServerProcess) => Promise<LoadResult>, baselineFirst = false): Promise<Pair> {
  if (baselineFirst) {
    const baseline = await measure(servers.baseline);
    return { baseline, controller: await measure(servers.controller) };
  }
  const controller = await measure(servers.controller);
  return { controller, baseline: await measure(servers.baseline) };
}

/**
 * Waits until the servers have finished what an earlier run left them (autocannon stops
 * sending at the end of a run, not the servers working on what it sent): until neither
 * used more than a tenth of a CPU over 200 ms, at most 30 s.
 */
async function settle(servers: readonly ServerProcess[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  let before = servers.map((server) => server.cpuSeconds());
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = servers.map((server) => server.cpuSeconds());
    // A process that is gone (NaN) counts as idle.
    if (now.every((seconds, i) => !(seconds - (before[i] ?? 0) >= 0.02))) return;
    before = now;
  }
}

/** The mean of several runs' figures. */
function meanOf(results: LoadResult[]): LoadResult {
  const mean = (field: 'ok' | 'failed' | 'seconds' | 'rps' | 'p50' | 'p99' | 'mean'): number =>
    results.reduce((total, result) => total + result[field], 0) / results.length;
  return {
    connections: results[0]?.connections ?? 0,
    ok: mean('ok'),
    failed: mean('failed'),
    seconds: mean('seconds'),
    rps: mean('rps'),
    p50: mean('p50'),
    p99: mean('p99'),
    mean: mean('mean'),
  };
}

function meanOfPairs(pairs: Pair[]): Pair {
  return { controller: meanOf(pairs.map((pair) => pair.controller)), baseline: meanOf(pairs.map((pair) => pair.baseline)) };
}

function throughput(server: ServerProcess, request: RequestSpec, connections: number, durationS: number): Promise<LoadResult> {
  return measured(server, `${request.method} ${request.path} at ${connections} connections`, async () => {
    await runLoad(server.url, request, { connections, durationS: WARMUP_S });
    await settle([server]);
    const cpuBefore = server.cpuSeconds();
    const result = await runLoad(server.url, request, { connections, durationS });
    const cpuUs = ((server.cpuSeconds() - cpuBefore) * 1e6) / Math.max(1, result.ok);
    await settle([server]);
    return { ...result, cpuUs };
  });
}

// ---- one database --------------------------------------------------------------------

async function releaseCount(kind: Kind, location: string, app: string): Promise<number> {
  if (kind === 'sqlite') {
    const db = new Database(location, { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM "releases" WHERE "app" = ?').get(app) as { n: number }).n;
    } finally {
      db.close();
    }
  }
  const client = new Client({ connectionString: location });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM "releases" WHERE "app" = $1', [app])).rows[0]?.n);
  } finally {
    await client.end();
  }
}

async function databaseVersion(kind: Kind, location: string): Promise<string> {
  if (kind === 'sqlite') {
    const db = new Database(':memory:');
    try {
      return `SQLite ${(db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v} (better-sqlite3)`;
    } finally {
      db.close();
    }
  }
  const client = new Client({ connectionString: location });
  await client.connect();
  try {
    return `PostgreSQL ${(await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? '?'} (pg)`;
  } finally {
    await client.end();
  }
}

async function benchDatabase(kind: Kind, serverUrl: string | undefined): Promise<DatabaseResult> {
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), `svc-bench-${kind}-`));
  let scratch: ScratchDatabase | null = null;
  const servers: Partial<Record<Side, ServerProcess>> = {};
  let seeder: Seeder | null = null;
  const cleanup = async (): Promise<void> => {
    await seeder?.close().catch(() => undefined);
    await servers.controller?.stop();
    await servers.baseline?.stop();
    if (scratch !== null) await scratch.drop().catch((error: unknown) => log(`could not drop ${scratch?.name}: ${String(error)}`));
    await rm(dir, { recursive: true, force: true });
  };
  cleanups.add(cleanup);
  try {
    const dataDir = join(dir, 'data');
    await mkdir(dataDir, { recursive: true });
    if (kind === 'postgres') {
      scratch = await createScratchDatabase(serverUrl as string);
      log(`PostgreSQL: scratch database ${scratch.name}`);
    }
    const sqliteFile = join(dataDir, 'controller.sqlite');
    const location = scratch?.url ?? sqliteFile;

    // The controller's own migrations create the schema.
    const migrator = await createDatabase({ url: scratch?.url, dataDir });
    await migrator.migrate();
    await migrator.close();

    const common = { SCHEDULER: 'memory', LOG_LEVEL: 'warn', NODE_ENV: 'production', DB_POOL_SIZE: String(POOL_SIZE) };
    servers.controller = await startServer('controller', CONTROLLER_MAIN, {
      ...common,
      DATA_DIR: dataDir,
      DATABASE_URL: scratch?.url ?? '',
      SECRET_KEY,
    }, PROFILE_ARGS);
    const { bench: token } = await setUpUsers(servers.controller.url);
    servers.baseline = await startServer('baseline', BASELINE_MAIN, {
      ...common,
      BASELINE_SQLITE_FILE: scratch === null ? sqliteFile : '',
      BASELINE_LOG_DIR: join(dir, 'baseline-logs'),
      BASELINE_DATABASE_URL: scratch?.url ?? '',
    });
    const both = servers as Record<Side, ServerProcess>;
    const idle = { controller: both.controller.memory().rssMiB, baseline: both.baseline.memory().rssMiB };

    seeder = kind === 'sqlite' ? new SqliteSeeder(sqliteFile) : await PostgresSeeder.connect(scratch?.url as string);
    const auth = { Authorization: `token ${token}` };
    const get = (path: string): RequestSpec => ({ method: 'GET', path, headers: auth });
    const postConfig = (app: string): RequestSpec => ({
      method: 'POST',
      path: `/v1/apps/${app}/config/`,
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: '{"values":{"BENCH_VALUE":"[<id>]"}}',
    });

    await seeder.addApps('bench', OWN_SPECIALS);
    await seeder.addApps('other', SHARED);
    for (const app of SHARED) await seeder.grant(app, 'bench');
    await seeder.addReleases('cfg-small', 'bench', 2, 100);
    await seeder.addReleases('cfg-large', 'bench', 2, 10_000);

    // Growth: the same user's list of apps and one app's list of releases, at each size.
    const growth: GrowthRow[] = [];
    let generic = 0;
    let releases = 1;
    for (const size of SIZES) {
      const target = size - OWN_SPECIALS.length - SHARED.length;
      const ids: string[] = [];
      while (generic < target) ids.push(GENERIC(++generic));
      const t0 = Date.now();
      await seeder.addApps('bench', ids);
      if (releases < size) await seeder.addReleases('hist', 'bench', releases + 1, size);
      releases = size;
      await seeder.analyze();
      log(`${kind}: ${size} apps and ${size} releases of hist loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      if (growth.length === 0) {
        // Both servers reach their steady state (compiled code, warm caches) before the first figure.
        for (const server of [both.controller, both.baseline]) {
          for (const request of [get('/v1/apps/'), get('/v1/apps/hist/releases/'), get(`/v1/apps/${GENERIC(1)}/`), postConfig('cfg-load')]) {
            await runLoad(server.url, request, { connections: 4, durationS: 1 });
          }
        }
      }
      const apps = await pairOf(both, (server) => latency(server, get('/v1/apps/')));
      const list = await pairOf(both, (server) => latency(server, get('/v1/apps/hist/releases/')), true);
      growth.push({ rows: size, apps, releases: list });
      log(`${kind}: ${size} rows: GET /v1/apps p50 ${fmt(apps.controller.p50)} ms, GET releases p50 ${fmt(list.controller.p50)} ms`);
    }
    const after100k = { controller: both.controller.memory().rssMiB, baseline: both.baseline.memory().rssMiB };

    // Config changes on apps with few and with many releases, in two passes in opposite
    // orders, so that the machine drifting over the minute does not pass for growth.
    const configApps = ['cfg-small', 'cfg-large', 'hist'];
    const counts = new Map<string, number>();
    for (const app of configApps) counts.set(app, await releaseCount(kind, location, app));
    const passes = new Map<string, Pair[]>();
    for (const order of [configApps, [...configApps].reverse()]) {
      for (const app of order) {
        const pair = await pairOf(both, (server) => latency(server, postConfig(app)));
        passes.set(app, [...(passes.get(app) ?? []), pair]);
      }
    }
    const configGrowth: ConfigRow[] = configApps.map((app) => ({ releases: counts.get(app) ?? 0, latency: meanOfPairs(passes.get(app) ?? []) }));
    for (const row of configGrowth) log(`${kind}: POST config with ${row.releases} releases: p50 ${fmt(row.latency.controller.p50)} ms`);

    // Throughput at scale: the largest number of apps, as many releases on hist.
    both.controller.resetSampledPeak();
    both.baseline.resetSampledPeak();
    const endpoints: { name: string; request: RequestSpec }[] = [
      { name: 'GET /v1/apps/<id>/', request: get(`/v1/apps/${GENERIC(50)}/`) },
      { name: `GET /v1/apps/ (page 1 of ${LARGEST_TEXT})`, request: get('/v1/apps/') },
      { name: `GET /v1/apps/<id>/releases/ (of ${LARGEST_TEXT})`, request: get('/v1/apps/hist/releases/') },
      { name: 'POST /v1/apps/<id>/config/', request: postConfig('cfg-load') },
      {
        name: 'POST /v1/auth/login/ (scrypt)',
        request: {
          method: 'POST',
          path: '/v1/auth/login/',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ username: 'bench', password: PASSWORD }),
        },
      },
    ];
    const rows: ThroughputRow[] = [];
    let turn = 0;
    for (const { name, request } of endpoints.filter((e) => ENDPOINTS === null || ENDPOINTS.some((part) => e.name.includes(part)))) {
      for (const connections of CONCURRENCY) {
        const seconds = request.path.includes('/auth/login') ? LOGIN_DURATION_S : DURATION_S;
        const pair = await pairOf(both, (server) => throughput(server, request, connections, seconds), turn++ % 2 === 1);
        const row = { endpoint: name, connections, ...pair, ratio: pair.controller.rps / pair.baseline.rps };
        rows.push(row);
        const cpu = (side: LoadResult): string => fmt(side.cpuUs ?? Number.NaN, 0);
        log(
          `${kind}: ${name} x${connections}: ${fmt(row.controller.rps, 0)} vs ${fmt(row.baseline.rps, 0)} req/s (${fmt(row.ratio, 2)}); ` +
            `CPU µs per answer ${cpu(row.controller)} vs ${cpu(row.baseline)} (${fmt((row.baseline.cpuUs ?? 0) / (row.controller.cpuUs ?? 1), 2)})`,
        );
      }
    }
    const memory = {
      controller: {
        idleMiB: idle.controller,
        after100kAppsMiB: after100k.controller,
        peakUnderLoadMiB: both.controller.sampledPeakMiB(),
        peakMiB: both.controller.peakMiB(),
      },
      baseline: {
        idleMiB: idle.baseline,
        after100kAppsMiB: after100k.baseline,
        peakUnderLoadMiB: both.baseline.sampledPeakMiB(),
        peakMiB: both.baseline.peakMiB(),
      },
    };
    return {
      database: kind,
      version: await databaseVersion(kind, location),
      throughput: rows,
      growth,
      configGrowth,
      memory,
      targets: evaluate(rows, growth, configGrowth),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    cleanups.delete(cleanup);
    await cleanup();
  }
}

/** The sections that can run alone: `npm run bench -- <name> [<name>...]` or BENCH=<name>[,<name>]. */
const ALONE = ['router', 'push', 'deploy', 'scale'] as const;

async function main(): Promise<void> {
  const asked = [...process.argv.slice(2), ...(process.env.BENCH ?? '').split(',')].map((s) => s.trim());
  const only = ALONE.filter((name) => asked.includes(name));
  const sections =
    only.length > 0 ? [...only] : (process.env.BENCH_SECTIONS ?? 'throughput,deploy-isolation,docker,router,push,deploy,scale').split(',').map((s) => s.trim());
  const wanted = only.length > 0 ? [] : (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  const serverUrl = process.env.DATABASE_URL?.trim() || undefined;
  const machine = describeMachine();
  const kinds: Kind[] = [];
  if (wanted.includes('sqlite')) kinds.push('sqlite');
  if (wanted.includes('postgres')) {
    if (serverUrl === undefined) log('DATABASE_URL is not set: PostgreSQL is skipped');
    else kinds.push('postgres');
  }
  const results: DatabaseResult[] = [];
  if (sections.includes('throughput')) for (const kind of kinds) results.push(await benchDatabase(kind, serverUrl));
  const isolation: IsolationResult[] = [];
  if (sections.includes('deploy-isolation')) for (const kind of kinds) isolation.push(await benchDeployIsolation(kind, CONTROLLER_MAIN, serverUrl, log));
  let text = only.length > 0 ? '' : report(machine, results, { durationS: DURATION_S, warmupS: WARMUP_S, growthRequests: GROWTH_REQUESTS, largestText: LARGEST_TEXT });
  if (isolation.length > 0) text += isolationReport(isolation);
  // The Docker scheduler's figures, when an engine is named (BENCH_DATABASES=none for them alone).
  const dockerHost = process.env.TEST_DOCKER_HOST?.trim() || process.env.DOCKER_HOST?.trim() || null;
  const noEngine = (what: string): void => log(`no Docker engine named (TEST_DOCKER_HOST or DOCKER_HOST): ${what}`);
  let docker: DockerResult | null = null;
  if (dockerHost !== null && sections.includes('docker')) {
    docker = await benchDocker(ROOT, dockerHost, log);
    text += dockerReport(docker);
  }
  const pushes: PushResult[] = [];
  if (sections.includes('push')) {
    const stack = process.env.BENCH_STACK_IMAGE?.trim() || null;
    for (const app of pushApps(ROOT)) {
      pushes.push(await benchPush(ROOT, 'process', null, log, app));
      if (dockerHost === null) continue;
      if (app.language !== 'node' && stack === null) log(`push (docker): the ${app.language} app is not pushed: BENCH_STACK_IMAGE names no stack with ${app.language}`);
      else pushes.push(await benchPush(ROOT, 'docker', dockerHost, log, app, stack));
    }
    if (dockerHost === null) noEngine("the push figures are the process scheduler's only");
    text += pushReport(pushes);
  }
  let router: RouterResult | null = null;
  if (sections.includes('router')) {
    router = await benchRouter();
    text += '\n' + routerReport(router, table);
  }
  let deploy: DeploySpeedResult | null = null;
  if (sections.includes('deploy')) {
    if (dockerHost === null) noEngine('the deploy speed section is left out');
    else {
      deploy = await benchDeploySpeed(ROOT, dockerHost, log);
      text += deploySpeedReport(deploy);
    }
  }
  let scale: ScaleResult | null = null;
  if (sections.includes('scale')) {
    scale = await benchScale(ROOT, dockerHost, log);
    text += scaleReport(scale);
  }
  if (restarts.length > 0) text += `\nServers restarted during the run:\n${restarts.map((note) => `- ${note}`).join('\n')}\n`;
  const load = loadavg().map((value) => value.toFixed(2)).join(' ');
  text += `\nLoad average at the end: ${load}\n`;
  process.stdout.write(text);
  // A section run alone does not overwrite the whole run's results.
  const resultsFile = only.length > 0 ? RESULTS_FILE.replace(/\.json$/, `-${only.join('-')}.json`) : RESULTS_FILE;
  await writeFile(
    resultsFile,
    `${JSON.stringify({ date: new Date().toISOString(), machine, loadAverage: load, durationS: DURATION_S, growthRequests: GROWTH_REQUESTS, results, isolation, restarts, docker, router, pushes, deploy, scale }, null, 2)}\n`,
  );
  log(`results written to ${resultsFile}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
