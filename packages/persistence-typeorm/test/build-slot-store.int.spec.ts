import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeBuildSlotStoreContract } from '@svc/core/testing';
import { createDatabase } from '../src';
import { TEST_DATABASE_URL, createScratchDatabase } from './support/postgres';

// Each test opens a database (PostgreSQL: a scratch one), which takes seconds on a busy machine.
jest.setTimeout(60_000);

describeBuildSlotStoreContract('TypeOrmBuildSlotStore [sqlite]', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-build-slots-'));
  const database = await createDatabase({ dataDir: dir });
  await database.migrate();
  return {
    store: database.createBuildSlotStore(),
    close: async () => {
      await database.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

if (TEST_DATABASE_URL !== null) {
  const server = TEST_DATABASE_URL;
  describeBuildSlotStoreContract('TypeOrmBuildSlotStore [postgresql]', async () => {
    const scratch = await createScratchDatabase(server, 'svc_build_slots');
    const first = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
    await first.migrate();
    return {
      store: first.createBuildSlotStore(),
      close: async () => {
        await first.close();
        await scratch.drop();
      },
    };
  });

  describe('TypeOrmBuildSlotStore [postgresql], two processes', () => {
    it('of builds of one user asked for at once through two handles on the database, takes exactly the limit', async () => {
      const scratch = await createScratchDatabase(server, 'svc_build_slots2');
      const first = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
      await first.migrate();
      const second = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
      try {
        const stores = [first.createBuildSlotStore(), second.createBuildSlotStore()];
        const now = new Date();
        const expires = new Date(now.getTime() + 60_000);
        const claims = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (stores[i % 2] ?? stores[0])!.acquire({ build: `b${i}`, username: 'alice', started: now, expires }, 2, now)),
        );
        expect(claims.filter((claim) => claim.taken)).toHaveLength(2);
      } finally {
        await first.close();
        await second.close();
        await scratch.drop();
      }
    });
  });
} else if (process.env.CI === 'true') {
  it('TypeOrmBuildSlotStore [postgresql] needs TEST_DATABASE_URL under CI=true', () => {
    throw new Error('TEST_DATABASE_URL is not set under CI=true');
  });
} else {
  process.stdout.write('TypeOrmBuildSlotStore [postgresql] not run: TEST_DATABASE_URL is not set.\n');
}
