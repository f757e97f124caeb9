import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryLogStore, describeSchedulerContract, describeSchedulerScenarios } from '@svc/core/testing';
import { ProcessScheduler } from '../src';
import { answersAt } from '@svc/supervisor-node';

const node = JSON.stringify(process.execPath);

async function openProcessScheduler(portRange: { from: number; to: number }): Promise<{ scheduler: ProcessScheduler; close(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-process-contract-'));
  const scheduler = new ProcessScheduler({ dataDir, logs: new InMemoryLogStore(), portRange, settleMs: 300, stopTimeoutMs: 2000, sandbox: null });
  return {
    scheduler,
    close: async () => {
      await scheduler.shutdown();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describeSchedulerContract('ProcessScheduler', {
  open: () => openProcessScheduler({ from: 49100, to: 49599 }),
  image: 'unused',
  listen: `exec ${node} -e "require('http').createServer((q, r) => r.end('ok')).listen(Number(process.env.PORT))"`,
  executes: true,
  unrunnable: [
    { what: 'an image build (no Procfile command)', build: { procfile: {} }, reason: /^its build is an image build without a Procfile command/ },
    { what: 'a pushed build whose checkout is gone', build: { workdir: join(tmpdir(), 'svc-contract-no-such-checkout') }, reason: /no longer on the controller's machine/ },
  ],
});

describeSchedulerScenarios('ProcessScheduler', {
  open: () => openProcessScheduler({ from: 49600, to: 49999 }),
  image: 'unused',
  serve: (delaySeconds) =>
    `exec ${node} -e "const t = require('crypto').randomUUID(); setTimeout(() => require('http').createServer((q, r) => r.end(process.env.SVC_RELEASE + ' ' + t)).listen(Number(process.env.PORT)), ${delaySeconds * 1000})"`,
  probe: (scheduler, app, type) => answersAt((scheduler as ProcessScheduler).endpoints(app, type)),
  notApplicable: {
    adopt:
      "the processes are the controller's own children: they stop with it (shutdown), a restarted controller stops those a killed one left (reapOrphans) and starts the recorded containers again (RestoreContainers), so nothing is left to adopt",
  },
  timeoutMs: 60_000,
});
