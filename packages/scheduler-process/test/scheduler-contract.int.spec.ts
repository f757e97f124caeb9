import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryLogStore, describeSchedulerContract } from '@svc/core/testing';
import { ProcessScheduler } from '../src';

describeSchedulerContract('ProcessScheduler', {
  open: async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-process-contract-'));
    const scheduler = new ProcessScheduler({ dataDir, logs: new InMemoryLogStore(), portRange: { from: 49100, to: 49599 }, settleMs: 300, stopTimeoutMs: 2000, sandbox: null });
    return {
      scheduler,
      close: async () => {
        await scheduler.shutdown();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
  image: 'unused',
  listen: `exec ${JSON.stringify(process.execPath)} -e "require('http').createServer((q, r) => r.end('ok')).listen(Number(process.env.PORT))"`,
  executes: true,
});
