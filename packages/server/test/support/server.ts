import pino from 'pino';
import { loadConfig, startServer, type RunningServer } from '../../src';
import type { Backend, Store } from './backend';
import { ApiClient } from './client';

/**
 * A command that runs a node program given as text (`exec node -e …`): a sandboxed app sees
 * no file of the test, only its own directory.
 */
export function inlineNode(program: string): string {
  return `exec ${JSON.stringify(process.execPath)} -e "eval(Buffer.from('${Buffer.from(program).toString('base64')}', 'base64').toString())"`;
}

/**
 * Sign-ups and sign-ins of every test controller at the lowest scrypt cost: no suite is about the
 * hash's cost (crypto-node's tests are), and at the default it was much of the suites' CPU.
 */
export const TEST_PASSWORD_HASHING = { PASSWORD_SCRYPT_N: '1024' } as const;

/** A uid range of its own for one test controller, as `SANDBOX_UID_RANGE`. */
export function testUidRange(): string {
  const from = 300000 + Math.floor(Math.random() * 5000) * 100;
  return `${from}-${from + 99}`;
}

/** A controller listening on a free port, with a client for it. */
export interface TestServer {
  readonly url: string;
  readonly store: Store;
  /** An anonymous client; `api.as(token)` for a user. */
  readonly api: ApiClient;
  /** The git SSH server's port; null when GIT_SSH_PORT is `off` (the default here). */
  readonly gitPort: number | null;
  /** The router's HTTP port; null when ROUTER_PORT is `off` (here it is 0 unless a suite says otherwise). */
  readonly routerPort: number | null;
  /** The router's HTTPS port; null unless the suite sets ROUTER_TLS_PORT. */
  readonly routerTlsPort: number | null;
  /** Stops the server (idempotent). */
  close(): Promise<void>;
}

/**
 * Starts a real controller in this process on a store, configured through loadConfig as
 * `npm start` is: the memory scheduler, no git server, silent logs, a free port on 127.0.0.1.
 */
export async function startTestServer(store: Store, env: Record<string, string> = {}): Promise<TestServer> {
  const config = loadConfig({
    SCHEDULER: 'memory',
    LOG_LEVEL: 'silent',
    // Servers of parallel test files must not compete for one fixed port; suites that need
    // the git server pass a port of their own (0: any free one).
    GIT_SSH_PORT: 'off',
    ROUTER_PORT: '0',
    // Controllers of parallel test files running apps must not share users (one would kill the
    // other's processes) nor network rules.
    SANDBOX_UID_RANGE: testUidRange(),
    // The router runs in this process unless a suite asks for worker processes.
    ROUTER_WORKERS: '0',
    ...TEST_PASSWORD_HASHING,
    ...env,
    ...(store.databaseUrl === undefined ? {} : { DATABASE_URL: store.databaseUrl }),
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: store.dataDir,
  });
  const running: RunningServer = await startServer(config, pino({ level: 'silent' }));
  return { url: running.url, store, api: new ApiClient(running.url), gitPort: running.gitPort, routerPort: running.routerPort, routerTlsPort: running.routerTlsPort, close: () => running.close() };
}

/** A server for the whole describe block: started before its tests on a fresh store, stopped after. */
export interface ServerHandle {
  /** The running server; only valid inside tests and hooks. */
  readonly current: TestServer;
  readonly api: ApiClient;
}

/**
 * Registers hooks that start one server (fresh store of the backend, optional environment)
 * before the block's tests and stop it after them. One server per file keeps the suite fast.
 */
export function useServer(backend: Backend, env: Record<string, string> = {}): ServerHandle {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startTestServer(await backend.newStore(), env);
  });
  afterAll(async () => {
    await server?.close();
  });
  const current = (): TestServer => {
    if (server === undefined) throw new Error('The test server is used before it started');
    return server;
  };
  return {
    get current() {
      return current();
    },
    get api() {
      return current().api;
    },
  };
}
