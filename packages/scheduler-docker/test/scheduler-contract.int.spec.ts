import { describeSchedulerContract } from '@svc/core/testing';
import { BUSYBOX, describeWithEngine, testScheduler } from './support/engine';

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
  });
});
