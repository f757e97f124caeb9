import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeLogStoreContract } from '@svc/core/testing';
import { FileLogStore } from '@svc/logs-file';

describeLogStoreContract('FileLogStore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-logs-contract-'));
  const store = new FileLogStore(dir);
  return {
    store,
    close: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
