import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { aContainer, anApp } from '@svc/core/testing';
import { createDatabase, type Database } from '../src';
import { createScratchDatabase, TEST_DATABASE_URL, type ScratchDatabase } from './support/postgres';

/*
 * What the metrics read from the database at each scrape: containers by recorded state and
 * the connections of the pool, on SQLite and (with TEST_DATABASE_URL) PostgreSQL.
 */

async function seed(db: Database): Promise<void> {
  await db.uow.transaction(async (repos) => {
    await repos.users.create({
      username: 'alice', email: 'alice@example.com', firstName: '', lastName: '', passwordHash: 'x',
      isSuperuser: false, isStaff: false, isActive: true, lastLogin: null, dateJoined: new Date(),
    });
    await repos.apps.create(anApp({ id: 'myapp', owner: 'alice' }));
    for (const [num, state] of [[1, 'up'], [2, 'up'], [3, 'crashed']] as const) {
      await repos.containers.create(aContainer({ app: 'myapp', num, state }));
    }
  });
}

function statsSuite(name: string, open: (dataDir: string) => Promise<{ db: Database; cleanup?: () => Promise<void> }>, poolMax: number): void {
  describe(`database statistics on ${name}`, () => {
    let dataDir: string;
    let db: Database;
    let cleanup: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'svc-stats-'));
      ({ db, cleanup } = await open(dataDir));
      await db.migrate();
      await seed(db);
    }, 60_000);

    afterAll(async () => {
      await db?.close();
      await cleanup?.();
      await rm(dataDir, { recursive: true, force: true });
    }, 60_000);

    it('counts the recorded containers by state', async () => {
      expect(await db.containerCountsByState()).toEqual({ up: 2, crashed: 1 });
    });

    it('names each app with containers once', async () => {
      expect(await db.appsWithContainers()).toEqual(['myapp']);
    });

    it('follows a change of state', async () => {
      const [first] = await db.uow.repositories.containers.listForApp('myapp');
      await db.uow.transaction((repos) => repos.containers.updateState(first!.uuid, 'down', new Date()));

      expect(await db.containerCountsByState()).toEqual({ up: 1, down: 1, crashed: 1 });
    });

    it('reports the pool, with callers waiting while every connection is busy', async () => {
      const idle = db.poolStats();
      expect(idle.max).toBe(poolMax);
      expect(idle.waiting).toBe(0);
      expect(idle.idle).toBeLessThanOrEqual(idle.open);

      // One transaction more than there are connections: every connection is held, one waits.
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started = 0;
      const holders = Array.from({ length: poolMax + 1 }, () =>
        db.uow.transaction(async (repos) => {
          started += 1;
          await repos.apps.findById('myapp');
          await held;
        }),
      );
      const deadline = Date.now() + 20_000;
      while (db.poolStats().waiting === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const busy = db.poolStats();
      release();
      await Promise.all(holders);

      expect(started).toBe(poolMax + 1);
      expect(busy.waiting).toBeGreaterThan(0);
      expect(busy.idle).toBeLessThan(busy.open);
      expect(db.poolStats().waiting).toBe(0);
    }, 60_000);
  });
}

// SQLite: one writer connection (transactions queue for it) and one reader.
statsSuite('SQLite', async (dataDir) => ({ db: await createDatabase({ dataDir }) }), 2);

if (TEST_DATABASE_URL === null) {
  const reason = 'PostgreSQL database statistics were not tested: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)';
  if (process.env.CI === 'true') throw new Error(`${reason}; CI must provide PostgreSQL`);
  process.stdout.write(`${reason}\n`);
} else {
  const serverUrl = TEST_DATABASE_URL;
  let scratch: ScratchDatabase;
  statsSuite(
    'PostgreSQL',
    async (dataDir) => {
      scratch = await createScratchDatabase(serverUrl, 'svc_stats');
      return { db: await createDatabase({ url: scratch.url, dataDir, poolSize: 3 }), cleanup: () => scratch.drop() };
    },
    3,
  );
}
