/*
 * Deploy isolation (ADR 0009): one tenant's deploy waits 30 s for its web process's health
 * check while another tenant changes its config. Runs the real controller with the process
 * scheduler on SQLite and, with DATABASE_URL, on PostgreSQL, and compares the other tenant's
 * config change latency while the deploy is pending with the same on an idle platform.
 *
 * Knobs: BENCH_ISOLATION_REQUESTS config changes per measurement (default 200),
 * BENCH_ISOLATION_DELAY_S seconds the slow web process takes to listen (default 30).
 */
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, type LoadResult, type RequestSpec } from './load';
import { startServer, type ServerProcess } from './processes';
import { createScratchDatabase, type ScratchDatabase } from './seed';

const REQUESTS = Number(process.env.BENCH_ISOLATION_REQUESTS ?? '200');
const DELAY_S = Number(process.env.BENCH_ISOLATION_DELAY_S ?? '30');
const CONNECTIONS = [1, 8] as const;
const PASSWORD = 'bench-password-1';
const SECRET_KEY = 'bench-secret-key-bench-secret-key-0123456789';

/** One measurement of the other tenant's config changes. */
export interface IsolationRow {
  connections: number;
  idle: LoadResult;
  pending: LoadResult;
  /** pending p99 / idle p99: the target is at most 2. */
  ratioP99: number;
  /** How long the slow deploy took, and how it was answered. */
  deploySeconds: number;
  deployStatus: number;
  /** Whether the measurement ended before the deploy was answered. */
  pendingThroughout: boolean;
}

/** What the deploy isolation section measured on one database. */
export interface IsolationResult {
  database: 'sqlite' | 'postgres';
  rows: IsolationRow[];
}

async function post(url: string, path: string, body: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `token ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function userWithApp(url: string, username: string, app: string): Promise<string> {
  await post(url, '/v1/auth/register/', { username, password: PASSWORD, email: `${username}@example.com` });
  const { json } = await post(url, '/v1/auth/login/', { username, password: PASSWORD });
  const token = json.token as string;
  const created = await post(url, '/v1/apps/', { id: app }, token);
  if (created.status !== 201) throw new Error(`creating ${app} answered ${created.status}`);
  return token;
}

async function measure(server: ServerProcess, request: RequestSpec, connections: number): Promise<LoadResult> {
  const result = await runLoad(server.url, request, { connections, amount: REQUESTS });
  if (result.failed > 0) throw new Error(`${result.failed} config changes failed; ${server.postMortem()}`);
  return result;
}

/** Runs the section on one database; `serverUrl` is the PostgreSQL server for a scratch database. */
export async function benchDeployIsolation(
  kind: 'sqlite' | 'postgres',
  controllerMain: string,
  serverUrl: string | undefined,
  log: (line: string) => void,
): Promise<IsolationResult> {
  const dir = await mkdtemp(join(tmpdir(), `svc-bench-isolation-${kind}-`));
  let scratch: ScratchDatabase | null = null;
  let server: ServerProcess | null = null;
  try {
    const dataDir = join(dir, 'data');
    await mkdir(dataDir, { recursive: true });
    if (kind === 'postgres') scratch = await createScratchDatabase(serverUrl as string);
    server = await startServer('controller', controllerMain, {
      SCHEDULER: 'process',
      HEALTHCHECK_TIMEOUT: String(DELAY_S * 4),
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      GIT_SSH_PORT: 'off',
      ROUTER_PORT: 'off',
      DATA_DIR: dataDir,
      DATABASE_URL: scratch?.url ?? '',
      SECRET_KEY,
    });
    const slowToken = await userWithApp(server.url, 'slowtenant', 'slow');
    const token = await userWithApp(server.url, 'tenant', 'quick');
    const config: RequestSpec = {
      method: 'POST',
      path: '/v1/apps/quick/config/',
      headers: { Authorization: `token ${token}`, 'Content-Type': 'application/json' },
      body: '{"values":{"BENCH_VALUE":"[<id>]"}}',
    };
    await runLoad(server.url, config, { connections: 4, amount: REQUESTS });

    // The slow tenant's web process listens only after DELAY_S seconds: each of its deploys
    // waits that long for the health check. Each measurement while one is pending follows one
    // on the idle platform, so that the load of the machine drifting does not pass for either.
    const web = `sleep ${DELAY_S}; exec ${process.execPath} -e "require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT)"`;
    const rows: IsolationRow[] = [];
    for (const connections of CONNECTIONS) {
      const idle = await measure(server, config, connections);
      const started = Date.now();
      let answered = false;
      const deploy = post(server.url, '/v1/apps/slow/builds/', { image: `example/slow:v${rows.length + 1}`, procfile: { web } }, slowToken).finally(() => {
        answered = true;
      });
      // Let the deploy reach its wait for the health check.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const pending = await measure(server, config, connections);
      const pendingThroughout = !answered;
      const { status } = await deploy;
      const seconds = (Date.now() - started) / 1000;
      log(`${kind}: x${connections}: idle p99 ${idle.p99.toFixed(2)} ms, pending p99 ${pending.p99.toFixed(2)} ms; the slow deploy answered ${status} after ${seconds.toFixed(1)} s`);
      rows.push({ connections, idle, pending, ratioP99: pending.p99 / idle.p99, deployStatus: status, deploySeconds: seconds, pendingThroughout });
    }
    return { database: kind, rows };
  } finally {
    await server?.stop();
    if (scratch !== null) await scratch.drop().catch((error: unknown) => log(`could not drop ${scratch?.name}: ${String(error)}`));
    await rm(dir, { recursive: true, force: true });
  }
}

function fmt(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** The section's table. */
export function isolationReport(results: IsolationResult[]): string {
  const out = [
    '',
    `## Deploy isolation: another tenant's config change while a deploy waits ${DELAY_S} s for its health check`,
    '',
    `${REQUESTS} config changes per measurement (process scheduler; latencies in ms).`,
    '',
    '| database | conns | idle p50 | idle p99 | pending p50 | pending p99 | p99 ratio | target <= 2 | deploy |',
    '|----------|------:|---------:|---------:|------------:|------------:|----------:|:-----------:|-------:|',
  ];
  for (const result of results) {
    for (const row of result.rows) {
      out.push(
        `| ${result.database} | ${row.connections} | ${fmt(row.idle.p50)} | ${fmt(row.idle.p99)} | ${fmt(row.pending.p50)} | ${fmt(row.pending.p99)} | ` +
          `${fmt(row.ratioP99)} | ${row.ratioP99 <= 2 && row.pendingThroughout ? 'yes' : 'NO'} | ${row.deployStatus} in ${fmt(row.deploySeconds, 1)} s |`,
      );
      if (!row.pendingThroughout) out.push(`(${result.database} x${row.connections}: the deploy was answered before the measurement ended)`);
    }
  }
  return `${out.join('\n')}\n`;
}
