import { describeSchedulerContract, describeSchedulerScenarios } from '@svc/core/testing';
import type { SwarmScheduler } from '../src';
import { ENGINE_UNRUNNABLE, answersAt, busyboxServe } from './support/contract-answers';
import { SWARM_BUSYBOX, describeWithSwarm, holdSwarm, testSwarm, type TestSwarm } from './support/swarm';

// Its tasks must stay where Swarm put them: no other file may drain a node meanwhile.
holdSwarm('shared');

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
    unrunnable: ENGINE_UNRUNNABLE,
  });

  const swarms = new Map<SwarmScheduler, TestSwarm>();
  describeSchedulerScenarios('SwarmScheduler', {
    open: async () => {
      // Longer starts and health checks than the single-container contract's: a scenario
      // starts several tasks at once on a shared swarm (a 1 s health check timed out under load).
      const t = await testSwarm({ startTimeoutMs: 90_000, healthIntervalMs: 3000 });
      swarms.set(t.scheduler, t);
      return { scheduler: t.scheduler, close: () => t.cleanUp() };
    },
    reopen: async (first) => {
      const t = swarms.get(first.scheduler as SwarmScheduler);
      if (t === undefined) throw new Error('not a scheduler of this file');
      // The controller stops: its services keep running; the next process makes a scheduler of the same settings.
      await t.scheduler.shutdown();
      const scheduler = t.again();
      return { scheduler, close: () => scheduler.shutdown() };
    },
    image: SWARM_BUSYBOX,
    serve: busyboxServe,
    probe: (scheduler, app, type) => answersAt((scheduler as SwarmScheduler).endpoints(app, type)),
    nativeRollout: "a release's containers of a type start as a new service of their own through the whole-type step (rollType); the replaced service is removed once the core stops its containers",
    timeoutMs: 300_000,
    settleMs: 15_000,
  });
});
