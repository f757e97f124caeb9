/*
 * The platform router in a process of its own, as the controller runs it (RouterCluster: the
 * routes and certificates in this process, the proxying in its worker processes), so that the
 * benchmark can read the CPU time and memory of the whole router: this process and its
 * workers. Started by bench/src/router.ts and bench/src/scale.ts with node:child_process fork.
 *
 * Environment: ROUTER_WORKERS, APP_PORT (every route's target), CERT and KEY (PEM files served
 * for every name), and either ROUTE_HOST (one host name routed to the app) or DATA_DIR (a
 * controller's SQLite database: its apps and domains are the routes, through the controller's
 * own route table, each app's web process being the app at APP_PORT).
 *
 * Messages from the parent: `{ t: 'targets', ports }` routes ROUTE_HOST to those ports (a
 * deploy), `{ t: 'pids' }` asks for this process's and its workers' ids. It sends
 * `{ t: 'ready', port, tlsPort, startMs }` once listening (startMs: from creating the router until both listeners are up), `{ t: 'done' }` and `{ t: 'pids', pids }`.
 */
import { readFileSync } from 'node:fs';
import { createDatabase } from '@svc/persistence-typeorm';
import { RouterCluster, type ResolvedRoute, type RouteTable } from '@svc/router-http';
import { PlatformRouteTable } from '@svc/server';

/** What the parent may ask. */
export type HostRequest = { t: 'targets'; ports: number[] } | { t: 'pids' };
/** What this process answers. */
export type HostMessage =
  | { t: 'ready'; port: number; tlsPort: number; startMs: number; listing: ListingCost | null }
  | { t: 'done' }
  | { t: 'pids'; pids: number[] };

/** What one listing of every route costs the host process: read from the database (cold), and from the names it remembers (warm, most refreshes). */
export interface ListingCost {
  routes: number;
  coldMs: number;
  warmMs: number;
}

/** One host name routed to the given ports. */
class OneHost implements RouteTable {
  constructor(
    private readonly host: string,
    public ports: number[],
  ) {}

  async resolve(host: string): Promise<ResolvedRoute | null> {
    return host.split(':')[0] === this.host ? { app: 'bench', targets: this.ports.map((port) => ({ host: '127.0.0.1', port })) } : null;
  }
}

const send = (message: HostMessage): void => {
  process.send?.(message);
};

async function main(): Promise<void> {
  const env = process.env;
  const appPort = Number(env.APP_PORT);
  const served = { certificate: readFileSync(env.CERT as string, 'utf8'), key: readFileSync(env.KEY as string, 'utf8') };
  let oneHost: OneHost | null = null;
  let platform: PlatformRouteTable | null = null;
  let routes: RouteTable;
  let close = async (): Promise<void> => undefined;
  if (env.DATA_DIR !== undefined && env.DATA_DIR !== '') {
    const database = await createDatabase({ dataDir: env.DATA_DIR });
    await database.migrate();
    const endpoints = { endpoints: () => [{ host: '127.0.0.1', port: appPort }] };
    platform = new PlatformRouteTable(database.uow, env.PLATFORM_DOMAIN ?? 'bench.test', endpoints);
    routes = platform;
    close = () => database.close();
  } else {
    oneHost = new OneHost(env.ROUTE_HOST as string, [appPort]);
    routes = oneHost;
  }
  // From here until listening: the routes read (every one, when the table lists them), the workers started and sent them.
  const began = performance.now();
  // No access log, as for HAProxy and nginx.
  const router = new RouterCluster({ workers: Number(env.ROUTER_WORKERS), routes, certificates: { find: async () => served }, logLevel: 'silent' });
  const port = (await router.listen(0, '127.0.0.1')).port;
  const tlsPort = (await router.listenTls(0, '127.0.0.1')).port;
  const startMs = performance.now() - began;
  let listing: ListingCost | null = null;
  if (platform !== null) {
    platform.forget();
    const cold = performance.now();
    const routeCount = (await platform.list()).length;
    const warm = performance.now();
    await platform.list();
    listing = { routes: routeCount, coldMs: warm - cold, warmMs: performance.now() - warm };
  }
  process.on('message', (message: HostRequest) => {
    if (message.t === 'pids') send({ t: 'pids', pids: [process.pid, ...router.pids()] });
    else if (oneHost !== null) {
      oneHost.ports = message.ports;
      void router.routesChanged().then(() => send({ t: 'done' }));
    }
  });
  process.once('SIGTERM', () => {
    void router
      .close(1000)
      .then(close)
      .finally(() => process.exit(0));
  });
  send({ t: 'ready', port, tlsPort, startMs, listing });
}

main().catch((error: unknown) => {
  process.stderr.write(`router host failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
