import { describeSchedulerContract, describeSchedulerScenarios } from '@svc/core/testing';
import type { DockerScheduler } from '../src';
import { ENGINE_UNRUNNABLE, answersAt, busyboxServe } from './support/contract-answers';
import { BUSYBOX, describeWithEngine, testScheduler, type TestScheduler } from './support/engine';

describeWithEngine('DockerScheduler contract (real engine)', () => {
  describeSchedulerContract('DockerScheduler', {
    open: async () => {
      const t = await testScheduler();
      return { scheduler: t.scheduler, close: () => t.cleanUp() };
    },
    image: BUSYBOX,
    listen: 'exec httpd -f -p "$PORT" -h /etc',
    executes: true,
    timeoutMs: 120_000,
    unrunnable: ENGINE_UNRUNNABLE,
  });

  const engines = new Map<DockerScheduler, TestScheduler>();
  describeSchedulerScenarios('DockerScheduler', {
    open: async () => {
      const t = await testScheduler();
      engines.set(t.scheduler, t);
      return { scheduler: t.scheduler, close: () => t.cleanUp() };
    },
    reopen: async (first) => {
      const t = engines.get(first.scheduler as DockerScheduler);
      if (t === undefined) throw new Error('not a scheduler of this file');
      // The controller stops: its containers keep running; the next process makes a scheduler of the same settings.
      await t.scheduler.shutdown();
      const scheduler = t.again();
      return { scheduler, close: () => scheduler.shutdown() };
    },
    image: BUSYBOX,
    serve: busyboxServe,
    probe: (scheduler, app, type) => answersAt((scheduler as DockerScheduler).endpoints(app, type)),
    timeoutMs: 120_000,
  });
});
