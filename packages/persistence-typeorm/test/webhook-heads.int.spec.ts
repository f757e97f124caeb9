import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWebhookTurnsContract } from '@svc/core/testing';
import { createDatabase } from '../src';
import { createScratchDatabase, TEST_DATABASE_URL } from './support/postgres';

describeWebhookTurnsContract('TypeORM [sqlite]', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-webhook-heads-'));
  const db = await createDatabase({ dataDir: dir });
  await db.migrate();
  return {
    uow: db.uow,
    close: async () => {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

if (TEST_DATABASE_URL === null) {
  process.stdout.write('The webhook delivery turns on PostgreSQL were not tested: set TEST_DATABASE_URL to run them.\n');
  if (process.env.CI === 'true') {
    it('needs PostgreSQL in CI', () => {
      throw new Error('TEST_DATABASE_URL is required when CI=true');
    });
  }
} else {
  const serverUrl = TEST_DATABASE_URL;
  describeWebhookTurnsContract('TypeORM [postgresql]', async () => {
    const scratch = await createScratchDatabase(serverUrl, 'svc_webhook_heads');
    const dir = await mkdtemp(join(tmpdir(), 'svc-webhook-heads-pg-'));
    const db = await createDatabase({ url: scratch.url, dataDir: dir });
    await db.migrate();
    return {
      uow: db.uow,
      close: async () => {
        await db.close();
        await scratch.drop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
}
