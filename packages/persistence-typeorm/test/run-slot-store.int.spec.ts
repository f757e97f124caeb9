import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeBuildSlotStoreContract } from '@svc/core/testing';
import { createDatabase } from '../src';
import { TEST_DATABASE_URL, createScratchDatabase } from './support/postgres';

// Each test opens a database (PostgreSQL: a scratch one), which takes seconds on a busy machine.
jest.setTimeout(60_000);

/*
 * The run slots (QUOTA_RUNS_PER_USER) keep the build slots' contract in a table of their own:
 * a user's runs and builds never count against each other.
 */
describeBuildSlotStoreContract('run slot store [sqlite]', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-run-slots-'));
  const database = await createDatabase({ dataDir: dir });
  await database.migrate();
  return {
    store: database.createRunSlotStore(),
    close: async () => {
      await database.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('run slot store [sqlite]: apart from the build slots', () => {
  it('counts a user\'s runs and builds apart: full build slots leave every run slot free, and the reverse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-run-slots-'));
    const database = await createDatabase({ dataDir: dir });
    try {
      await database.migrate();
      const now = new Date();
      const expires = new Date(now.getTime() + 60_000);
      const builds = database.createBuildSlotStore();
      const runs = database.createRunSlotStore();
      expect(await builds.acquire({ build: 'b1', username: 'alice', started: now, expires }, 1, now)).toEqual({ taken: true, held: 0 });
      expect(await runs.acquire({ build: 'r1', username: 'alice', started: now, expires }, 1, now)).toEqual({ taken: true, held: 0 });
      expect(await runs.acquire({ build: 'r2', username: 'alice', started: now, expires }, 1, now)).toEqual({ taken: false, held: 1 });
      await builds.release('b1');
      expect(await runs.acquire({ build: 'r3', username: 'alice', started: now, expires }, 1, now)).toEqual({ taken: false, held: 1 });
    } finally {
      await database.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

if (TEST_DATABASE_URL !== null) {
  const server = TEST_DATABASE_URL;
  describeBuildSlotStoreContract('run slot store [postgresql]', async () => {
    const scratch = await createScratchDatabase(server, 'svc_run_slots');
    const database = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
    await database.migrate();
    return {
      store: database.createRunSlotStore(),
      close: async () => {
        await database.close();
        await scratch.drop();
      },
    };
  });

  describe('run slot store [postgresql], two processes', () => {
    it('of runs of one owner asked for at once through two handles on the database, takes exactly the limit', async () => {
      const scratch = await createScratchDatabase(server, 'svc_run_slots2');
      const first = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
      await first.migrate();
      const second = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
      try {
        const stores = [first.createRunSlotStore(), second.createRunSlotStore()];
        const now = new Date();
        const expires = new Date(now.getTime() + 60_000);
        const claims = await Promise.all(
          Array.from({ length: 12 }, (_, i) => (stores[i % 2] ?? stores[0])!.acquire({ build: `r${i}`, username: 'alice', started: now, expires }, 3, now)),
        );
        expect(claims.filter((claim) => claim.taken)).toHaveLength(3);
      } finally {
        await first.close();
        await second.close();
        await scratch.drop();
      }
    });
  });
} else if (process.env.CI === 'true') {
  it('run slot store [postgresql] needs TEST_DATABASE_URL under CI=true', () => {
    throw new Error('TEST_DATABASE_URL is not set under CI=true');
  });
} else {
  process.stdout.write('run slot store [postgresql] not run: TEST_DATABASE_URL is not set.\n');
}
