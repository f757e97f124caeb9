import { describeSchedulerContract } from '@svc/core/testing';
import { SWARM_BUSYBOX, describeWithSwarm, testSwarm } from './support/swarm';

describeWithSwarm('SwarmScheduler contract (real swarm)', () => {
  describeSchedulerContract('SwarmScheduler', {
    open: async () => {
      const t = await testSwarm();
      return { scheduler: t.scheduler, close: () => t.cleanUp() };
    },
    image: SWARM_BUSYBOX,
    listen: 'exec httpd -f -p "$PORT" -h /etc',
    executes: true,
    timeoutMs: 120_000,
  });
});
