import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createDatabase, type Database } from '@svc/persistence-typeorm';
import { createEngine } from '@svc/scheduler-docker';
import { WorkingCopy, keyPair } from '../../builder-git/test/support/git-client';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from '../../persistence-typeorm/test/support/postgres';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, ownBuildNetwork, removeBuildNetwork, signUp } from './support';

jest.setTimeout(300_000);

/*
 * QUOTA_BUILDS_PER_USER with the build slots in the database: Dockerfile pushes of one user
 * sent at the same moment, spread over two controller instances on one PostgreSQL database
 * (one instance on SQLite), build at most the quota together; the others are refused with
 * BUILD.TOO_MANY (429 on the API). A slot another controller holds counts; an expired one
 * (its controller stopped renewing it) is taken over.
 */

const TEST_DOCKER_HOST = process.env.TEST_DOCKER_HOST?.trim() || null;
const BUSYBOX = 'svc-test/busybox:1';
const QUOTA = 2;
const PUSHES = 6;

interface Setup {
  /** The controllers' DATABASE_URL and DATA_DIR for instance `index`; how many instances. */
  env(index: number, root: string): Record<string, string>;
  instances: number;
  /** A handle on the same database, as another controller process would have. */
  open(root: string): Promise<Database>;
  close(): Promise<void>;
}

async function postgresSetup(server: string): Promise<Setup> {
  const scratch: ScratchDatabase = await createScratchDatabase(server, 'svc_build_slots_e2e');
  return {
    instances: 2,
    env: (index, root) => ({ DATABASE_URL: scratch.url, DATA_DIR: join(root, `data-${index}`) }),
    open: async (root) => createDatabase({ url: scratch.url, dataDir: root }),
    close: () => scratch.drop(),
  };
}

const sqliteSetup = async (): Promise<Setup> => ({
  // SQLite serves one controller process.
  instances: 1,
  env: (_index, root) => ({ DATA_DIR: join(root, 'data-0') }),
  open: async (root) => createDatabase({ dataDir: join(root, 'data-0') }),
  close: async () => undefined,
});

const CASES: Array<{ name: string; setup: () => Promise<Setup>; unavailable: string | null }> = [
  { name: 'two controllers on PostgreSQL', setup: () => postgresSetup(TEST_DATABASE_URL as string), unavailable: TEST_DATABASE_URL === null ? 'TEST_DATABASE_URL is not set' : null },
  { name: 'one controller on SQLite', setup: sqliteSetup, unavailable: null },
];

describe.each(CASES)('builds at once per user, counted in the database: $name', ({ name, setup, unavailable }) => {
  const missing = TEST_DOCKER_HOST === null ? 'TEST_DOCKER_HOST is not set' : unavailable;
  if (missing !== null && process.env.CI !== 'true') {
    process.stdout.write(`builds at once per user (${name}): not run, ${missing}.\n`);
    it.skip(`not run: ${missing}`, () => undefined);
    return;
  }
  const tag = `${process.pid.toString(36)}${name.length}`;
  // One installation in several processes: one build network, its own on the shared engine.
  const build = ownBuildNetwork();
  let root: string;
  let database: Setup;
  let servers: RunningServer[] = [];
  let other: Database;
  let cleanup: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    if (missing !== null) throw new Error(`cannot run under CI=true: ${missing}`);
    root = await mkdtemp(join(tmpdir(), 'svc-build-slots-'));
    database = await setup();
    for (let index = 0; index < database.instances; index += 1) {
      const config = loadConfig({
        ...database.env(index, root),
        SCHEDULER: 'memory',
        IMAGE_BUILDER: 'docker',
        DOCKER_HOST: TEST_DOCKER_HOST as string,
        STACK_IMAGE: BUSYBOX,
        SECRET_KEY: 'k'.repeat(48),
        QUOTA_BUILDS_PER_USER: String(QUOTA),
        BUILD_TIMEOUT_SECONDS: '120',
        GIT_SSH_PORT: '0',
        ROUTER_PORT: '0',
        ROUTER_WORKERS: '0',
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'silent',
        ...build,
      });
      servers.push(await startServer(config, pino({ level: 'silent' })));
    }
    other = await database.open(root);
  });

  afterAll(async () => {
    await cleanup();
    await other?.close();
    for (const server of servers) await server.close();
    servers = [];
    if (TEST_DOCKER_HOST !== null) await removeBuildNetwork(createEngine(TEST_DOCKER_HOST), { network: build.BUILDPACK_NETWORK, bridge: build.BUILDPACK_BRIDGE });
    await database?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it(`of ${PUSHES} Dockerfile pushes sent at once, builds only what the quota leaves; a live slot elsewhere counts, an expired one is taken over`, async () => {
    const alice = await signUp(new ApiClient(servers[0]!.url), `alice${tag}`);
    const key = await keyPair(root, 'alice');
    expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: key.publicKey })).status).toBe(201);
    const slots = other.createBuildSlotStore();
    const now = new Date();
    // Another controller's running build holds one of the two slots; a crashed one's slot has expired.
    await slots.acquire({ build: 'elsewhere', username: alice.username, started: now, expires: new Date(now.getTime() + 600_000) }, QUOTA, now);
    await slots.acquire({ build: 'crashed', username: alice.username, started: new Date(now.getTime() - 600_000), expires: new Date(now.getTime() - 1000) }, QUOTA + 1, now);

    const copies: WorkingCopy[] = [];
    const apps = Array.from({ length: PUSHES }, (_, i) => `slots${i}-${tag}`);
    // Deleting an app removes its images from the engine.
    cleanup = async () => {
      for (const app of apps) await alice.api.delete(`/v1/apps/${app}/`).catch(() => undefined);
    };
    for (const [i, app] of apps.entries()) {
      expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
      const copy = await WorkingCopy.init(join(root, `app-${i}`), join(root, `home-${i}`), key);
      const server = servers[i % servers.length]!;
      await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${server.gitPort as number}/${app}.git`]);
      // Long enough that every push asks for its slot while the first builds still run.
      await copy.commit({ Dockerfile: `FROM ${BUSYBOX}\nRUN sleep 20\nCMD ["sleep", "3600"]\n`, Procfile: 'web: sleep 3600\n' });
      copies.push(copy);
    }

    const outcomes = await Promise.all(copies.map(async (copy) => {
      const outcome = await copy.git(['push', 'svc', 'main']);
      return { code: outcome.code, output: `${outcome.stdout}${outcome.stderr}` };
    }));

    const built = outcomes.filter((outcome) => outcome.code === 0);
    const refused = outcomes.filter((outcome) => /You already run 2 builds, the most allowed at once/.test(outcome.output));
    expect({ built: built.length, refused: refused.length }).toEqual({ built: QUOTA - 1, refused: PUSHES - QUOTA + 1 });
    // Every slot taken was given back; the other controller's is still there.
    const probe = await slots.acquire({ build: 'probe', username: alice.username, started: new Date(), expires: new Date(Date.now() + 60_000) }, 100, new Date());
    expect(probe).toEqual({ taken: true, held: 1 });
    await slots.release('probe');
  });
});
