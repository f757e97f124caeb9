import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import pino from 'pino';
import type { ContainerState } from '@svc/core';
import { ChaosScheduler, type ChaosRates } from '@svc/scheduler-chaos';
import { MemoryScheduler } from '@svc/scheduler-memory';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from '../../persistence-typeorm/test/support/postgres';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, describeEachBackend, signUp, type Backend, type ContainerJson, type HttpResponse, type PageJson, type ReleaseJson, type Session } from './support';

/*
 * Fault injection. A scheduler that fails (SCHEDULER_CHAOS wraps the memory scheduler) makes
 * every operation that needs it answer 503 and change nothing: the listings are as before and
 * the old containers still run. Retried until they succeed, random failures leave a
 * consistent state. A PostgreSQL connection killed in the middle of a write leaves no part of it.
 */

/** A controller with its scheduler in reach: the chaos wrapper and the memory scheduler inside. */
interface ChaosServer {
  running: RunningServer;
  chaos: ChaosScheduler;
  memory: MemoryScheduler;
  api: ApiClient;
}

async function startChaosServer(dataDir: string, databaseUrl: string | undefined, chaos: string): Promise<ChaosServer> {
  const config = loadConfig({
    SCHEDULER: 'memory',
    SCHEDULER_CHAOS: chaos,
    HOST: '127.0.0.1',
    PORT: '0',
    ROUTER_PORT: '0',
    GIT_SSH_PORT: 'off',
    DATA_DIR: dataDir,
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
  });
  const running = await startServer(config, pino({ level: 'silent' }));
  if (!(running.scheduler instanceof ChaosScheduler)) throw new Error('SCHEDULER_CHAOS did not wrap the scheduler');
  const memory = running.scheduler.inner;
  if (!(memory instanceof MemoryScheduler)) throw new Error('SCHEDULER=memory did not give the memory scheduler');
  return { running, chaos: running.scheduler, memory, api: new ApiClient(running.url) };
}

/** What a client can see of an app, and what the scheduler runs for it. */
interface Observed {
  app: unknown;
  config: unknown;
  releases: number[];
  builds: number;
  containers: Array<Pick<ContainerJson, 'uuid' | 'type' | 'num' | 'release' | 'state'>>;
  domains: number;
  /** The scheduler's state of each listed container (missing: not running). */
  running: Record<string, ContainerState | 'missing'>;
}

async function observe(s: ChaosServer, session: Session, app: string): Promise<Observed> {
  // Reading must not be disturbed by the chaos being measured.
  const rates = s.chaos.rates;
  s.chaos.setRates({});
  try {
    const get = async <T>(path: string): Promise<T> => {
      const res = await session.api.get<T>(`/v1/apps/${app}/${path}`);
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
      return res.body;
    };
    const containers = (await get<PageJson<ContainerJson>>('containers/?page_size=1000')).results.map(({ uuid, type, num, release, state }) => ({ uuid, type, num, release, state }));
    const states = await s.memory.states(containers.map((c) => c.uuid));
    return {
      app: await get(''),
      config: await get('config/'),
      releases: (await get<PageJson<ReleaseJson>>('releases/?page_size=1000')).results.map((r) => r.version),
      builds: (await get<PageJson<unknown>>('builds/?page_size=1000')).count,
      containers,
      domains: (await get<PageJson<unknown>>('domains/')).count,
      running: Object.fromEntries(containers.map((c) => [c.uuid, states.get(c.uuid) ?? 'missing'])),
    };
  } finally {
    s.chaos.setRates(rates);
  }
}

function expectUnavailable(res: HttpResponse<unknown>, what: string): void {
  expect([what, res.status]).toEqual([what, 503]);
  expect(res.body).toEqual({ detail: expect.stringMatching(/^The scheduler failed to .+\(chaos\)$/) });
}

describeEachBackend('a failing scheduler', (backend: Backend) => {
  jest.setTimeout(90_000);
  let s: ChaosServer;
  let alice: Session;

  beforeAll(async () => {
    const store = await backend.newStore();
    // Every container creation fails from the start: the first deploy shows the wiring works.
    s = await startChaosServer(store.dataDir, store.databaseUrl, 'create=1,seed=42');
    alice = await signUp(s.api, 'alice');
  });

  afterAll(async () => {
    await s?.running.close();
  });

  it('SCHEDULER_CHAOS wraps the configured scheduler: the first deploy fails with 503 and creates no release', async () => {
    expect((await alice.api.post('/v1/apps/', { id: 'wired' })).status).toBe(201);
    const before = await observe(s, alice, 'wired');
    expectUnavailable(await alice.api.post('/v1/apps/wired/builds/', { image: 'example/app:v1' }), 'build');
    expect(await observe(s, alice, 'wired')).toEqual(before);
    expect(before.releases).toEqual([1]);
    expect(s.chaos.injected.create).toBe(1);
  });

  describe('with a deployed app of three containers', () => {
    const app = 'steady';
    let before: Observed;

    beforeAll(async () => {
      s.chaos.setRates({});
      expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
      expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image: 'example/app:v1', procfile: { web: 'serve', worker: 'work' } })).status).toBe(201);
      expect((await alice.api.post(`/v1/apps/${app}/scale/`, { web: 2, worker: 1 })).status).toBe(204);
      expect((await alice.api.post(`/v1/apps/${app}/domains/`, { domain: 'steady.example.com' })).status).toBe(201);
      before = await observe(s, alice, app);
      expect(before.containers).toHaveLength(3);
      expect(Object.values(before.running)).toEqual(['up', 'up', 'up']);
    });

    const changes: Array<[string, string, unknown]> = [
      ['config', 'config/', { values: { FOO: 'bar' } }],
      ['build', 'builds/', { image: 'example/app:v2', procfile: { web: 'serve', worker: 'work' } }],
      ['rollback', 'releases/rollback/', { version: 2 }],
      ['scale up', 'scale/', { web: 4 }],
    ];

    it.each([
      ['create', { create: 1 }],
      ['start (the container exists, then fails)', { start: 1 }],
      ['create at half the calls', { create: 0.5 }],
    ] as Array<[string, ChaosRates]>)('a %s failure: config, build, rollback and scale answer 503 and change nothing', async (_name, rates) => {
      const sizeBefore = s.memory.size;
      s.chaos.setRates(rates);
      for (const [what, path, body] of changes) {
        const res = await alice.api.post(`/v1/apps/${app}/${path}`, body);
        // At half the calls some requests may get through; those that fail must leave no trace.
        if (res.status === 503 || rates.create === 1 || rates.start === 1) {
          expectUnavailable(res, what);
          expect(await observe(s, alice, app)).toEqual(before);
          // Nothing half-started is left running either.
          expect(s.memory.size).toBe(sizeBefore);
        } else {
          expect([what, res.status]).toEqual([what, what === 'scale up' ? 204 : 201]);
          s.chaos.setRates({});
          before = await observe(s, alice, app);
          s.chaos.setRates(rates);
        }
      }
      s.chaos.setRates({});
    });

    it('a failing run answers 503 (a bare string at 1.0) and leaves no run container behind', async () => {
      s.chaos.setRates({ run: 1 });
      expectUnavailable(await alice.api.post(`/v1/apps/${app}/run/`, { command: 'ls' }), 'run');
      const old = await alice.api.at('1.0').post(`/v1/apps/${app}/run/`, { command: 'ls' });
      expect([old.status, old.body]).toEqual([503, expect.stringMatching(/^The scheduler failed to run the command: .+\(chaos\)$/)]);
      s.chaos.setRates({});
      expect(await observe(s, alice, app)).toEqual(before);
      const runs = await alice.api.get<PageJson<unknown>>(`/v1/apps/${app}/containers/run/`);
      expect(runs.body.count).toBe(0);
    });

    it('a failing stop makes delete answer 503: the app, its containers and its domain stay, all running', async () => {
      s.chaos.setRates({ stop: 1 });
      expectUnavailable(await alice.api.delete(`/v1/apps/${app}/`), 'delete');
      s.chaos.setRates({ destroy: 1 });
      expectUnavailable(await alice.api.delete(`/v1/apps/${app}/`), 'delete');
      s.chaos.setRates({});
      expect(await observe(s, alice, app)).toEqual(before);
    });

    it('a failing restart answers 503 and changes no record; retried without faults, every container runs', async () => {
      s.chaos.setRates({ create: 1 });
      expectUnavailable(await alice.api.post(`/v1/apps/${app}/containers/web/1/restart/`), 'restart');
      s.chaos.setRates({});
      const after = await observe(s, alice, app);
      expect(after.containers).toEqual(before.containers);
      const retried = await alice.api.post<ContainerJson[]>(`/v1/apps/${app}/containers/restart/`);
      expect(retried.status).toBe(200);
      expect(retried.body).toHaveLength(before.containers.length);
      expect(Object.values((await observe(s, alice, app)).running).every((state) => state === 'up')).toBe(true);
    });

    it('listing containers works while the scheduler cannot report states', async () => {
      s.chaos.setRates({ states: 1 });
      const res = await alice.api.get<PageJson<ContainerJson>>(`/v1/apps/${app}/containers/`);
      s.chaos.setRates({});
      expect(res.status).toBe(200);
      expect(res.body.results.map((c) => c.uuid)).toEqual(before.containers.map((c) => c.uuid));
    });
  });

  it('random failures, each request retried until it succeeds, end in a consistent state', async () => {
    const app = 'retried';
    s.chaos.setRates({});
    expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
    s.chaos.setRates({ create: 0.1, start: 0.1, stop: 0, destroy: 0.3, run: 0.4, states: 0.3 });
    const operations: Array<[string, string, unknown, number]> = [
      ['build', 'builds/', { image: 'example/app:v1', procfile: { web: 'serve', worker: 'work' } }, 201],
      ['scale', 'scale/', { web: 3, worker: 2 }, 204],
      ['config', 'config/', { values: { A: '1' } }, 201],
      ['config', 'config/', { values: { B: '2' } }, 201],
      ['run', 'run/', { command: 'ls' }, 200],
      ['build', 'builds/', { image: 'example/app:v2', procfile: { web: 'serve', worker: 'work' } }, 201],
      ['rollback', 'releases/rollback/', {}, 201],
      ['scale', 'scale/', { web: 1, worker: 0 }, 204],
      ['config', 'config/', { values: { A: null } }, 201],
    ];
    let unavailable = 0;
    for (const [what, path, body, success] of operations) {
      let attempts = 0;
      for (;;) {
        attempts += 1;
        const res = await alice.api.post(`/v1/apps/${app}/${path}`, body);
        if (res.status === success) break;
        expectUnavailable(res, what);
        unavailable += 1;
        if (attempts >= 40) throw new Error(`${what} did not succeed in 40 attempts`);
      }
    }
    s.chaos.setRates({});
    expect(unavailable).toBeGreaterThan(0);
    const final = await observe(s, alice, app);
    // One release per successful change, numbered without gap: v1 (create), v2 (build),
    // v3 and v4 (config), v5 (build), v6 (rollback to v4), v7 (config).
    expect(final.releases).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(final.builds).toBe(2);
    // The scale before the last change left one web; the last change redeployed it.
    expect(final.containers.map((c) => `${c.type}.${c.num}@${c.release}`)).toEqual(['web.1@v7']);
    expect(Object.values(final.running)).toEqual(['up']);
    expect((final.config as { values: Record<string, string> }).values).toEqual({ B: '2', SVC_APP: app, SVC_RELEASE: 'v7' });
    // Nothing runs that the API does not list (stops never failed here, so nothing leaked).
    const listed = await Promise.all(['wired', 'steady', app].map(async (id) => (await observe(s, alice, id)).containers.length));
    expect(s.memory.size).toBe(listed.reduce((a, b) => a + b, 0));
  });

  it('a delete whose stops fail at random brings back what it stopped, and succeeds when retried', async () => {
    const app = 'leaving';
    s.chaos.setRates({});
    expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
    expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image: 'example/app:v1', procfile: { web: 'serve' } })).status).toBe(201);
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { web: 4 })).status).toBe(204);
    const before = await observe(s, alice, app);
    const sizeBefore = s.memory.size;
    s.chaos.setRates({ stop: 0.3, destroy: 0.3 });
    let failures = 0;
    for (let attempt = 1; ; attempt++) {
      const res = await alice.api.delete(`/v1/apps/${app}/`);
      if (res.status === 204) break;
      expectUnavailable(res, 'delete');
      failures += 1;
      expect(await observe(s, alice, app)).toEqual(before);
      if (attempt >= 30) throw new Error('delete did not succeed in 30 attempts');
    }
    s.chaos.setRates({});
    expect(failures).toBeGreaterThan(0);
    expect((await alice.api.get(`/v1/apps/${app}/`)).status).toBe(404);
    expect(s.memory.size).toBe(sizeBefore - 4);
  });
});

if (TEST_DATABASE_URL === null) {
  if (process.env.CI === 'true') throw new Error('CI=true: the mid-write connection kill test needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.stdout.write('The mid-write connection kill test of chaos.e2e.spec.ts was not run: it needs PostgreSQL; set TEST_DATABASE_URL to run it.\n');
  describe.skip('a PostgreSQL connection killed in the middle of a write (skipped: TEST_DATABASE_URL is not set)', () => {
    it('leaves no partial write', () => undefined);
  });
} else {
  const serverUrl = TEST_DATABASE_URL;

  describe('a PostgreSQL connection killed in the middle of a write', () => {
    jest.setTimeout(60_000);
    let scratch: ScratchDatabase;
    let dataDir: string;
    let s: ChaosServer;
    let admin: Client;
    let alice: Session;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'svc-kill-'));
      scratch = await createScratchDatabase(serverUrl, 'svc_kill');
      s = await startChaosServer(dataDir, scratch.url, 'seed=1');
      admin = new Client({ connectionString: scratch.url });
      await admin.connect();
      alice = await signUp(s.api, 'alice');
      expect((await alice.api.post('/v1/apps/', { id: 'myapp' })).status).toBe(201);
      expect((await alice.api.post('/v1/apps/myapp/builds/', { image: 'example/app:v1', procfile: { web: 'serve' } })).status).toBe(201);
    });

    afterAll(async () => {
      await admin?.end();
      await s?.running.close();
      await scratch?.drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    const counts = async (): Promise<Record<string, number>> => {
      const result: Record<string, number> = {};
      for (const table of ['configs', 'builds', 'releases', 'containers', 'apps']) {
        const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`);
        result[table] = Number(rows[0]?.n);
      }
      return result;
    };

    it('a config change whose connection dies after its config row and before its release leaves neither', async () => {
      const before = await counts();
      // Hold the releases table, so that the request's transaction stops at its release insert,
      // after it has written the new config.
      const blocker = new Client({ connectionString: scratch.url });
      await blocker.connect();
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE releases IN EXCLUSIVE MODE');
      const pending = alice.api.post('/v1/apps/myapp/config/', { values: { HALF: 'written' } });
      let victim: number | null = null;
      for (let i = 0; i < 200 && victim === null; i++) {
        const { rows } = await admin.query<{ pid: number }>(
          `SELECT a.pid FROM pg_stat_activity a
            WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.query ILIKE 'INSERT INTO "releases"%'`,
        );
        victim = rows[0]?.pid ?? null;
        if (victim === null) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(victim).not.toBeNull();
      // The waiting transaction has written to configs already: it holds that table's write lock.
      const { rows: locks } = await admin.query<{ relation: string }>(
        "SELECT relation::regclass::text AS relation FROM pg_locks WHERE pid = $1 AND mode = 'RowExclusiveLock'",
        [victim],
      );
      expect(locks.map((l) => l.relation)).toEqual(expect.arrayContaining(['configs']));
      await admin.query('SELECT pg_terminate_backend($1)', [victim]);
      await blocker.query('ROLLBACK');
      await blocker.end();

      const res = await pending;
      expect(res.status).toBe(503);
      expect(await counts()).toEqual(before);
      // Every config belongs to a release: none was left behind by the killed transaction.
      const { rows: orphans } = await admin.query('SELECT c.uuid FROM configs c LEFT JOIN releases r ON r.config = c.uuid WHERE r.uuid IS NULL');
      expect(orphans).toEqual([]);
      // The scheduler runs only the containers the database lists.
      expect(s.memory.size).toBe(before.containers);

      // The same request again succeeds, with the next version.
      const retried = await alice.api.post('/v1/apps/myapp/config/', { values: { HALF: 'written' } });
      expect(retried.status).toBe(201);
      expect(retried.headers.get('svc-release')).toBe('3');
      expect(await counts()).toEqual({ ...before, configs: (before.configs ?? 0) + 1, releases: (before.releases ?? 0) + 1 });
    });
  });
}
