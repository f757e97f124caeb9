import { CONTRACT_FAILING_COMMAND, FakeScheduler, describeSchedulerContract, describeSchedulerScenarios } from '@svc/core/testing';
import { ChaosScheduler } from '@svc/scheduler-chaos';

// With no fault drawn, the wrapper is the scheduler it wraps (here the test double, which
// runs nothing): it passes every call through, slowed by a little latency.
const wrap = (inner: FakeScheduler): ChaosScheduler => new ChaosScheduler(inner, { rates: {}, seed: 7, latencyMs: 5 });

describeSchedulerContract('ChaosScheduler (no faults, around the FakeScheduler)', {
  open: async () => {
    const inner = new FakeScheduler();
    inner.refuseToRun((build) => build.image === 'example/absent:1', 'image example/absent:1 cannot be pulled: not found');
    return { scheduler: wrap(inner), close: async () => undefined };
  },
  image: 'example/app:1',
  listen: 'serve',
  executes: false,
  // The wrapper passes the question through: the wrapped scheduler's answer is its answer.
  unrunnable: [{ what: 'what the wrapped scheduler refuses', build: { image: 'example/absent:1' }, reason: /^image example\/absent:1 cannot be pulled/ }],
});

const EXECUTES_NOTHING = 'it wraps the test double, which executes nothing: a start is up at once, no process listens, waits or answers';

describeSchedulerScenarios('ChaosScheduler (no faults, around the FakeScheduler)', {
  open: async () => {
    const inner = new FakeScheduler();
    // What the test double has instead of a process that exits before it listens.
    inner.failStartOf((spec) => spec.command === CONTRACT_FAILING_COMMAND, new Error('it exited with code 3 before it was up'));
    return { scheduler: wrap(inner), close: async () => undefined };
  },
  // A new wrapper around the same scheduler: what the wrapped one keeps is still there.
  reopen: async (first) => ({ scheduler: wrap((first.scheduler as ChaosScheduler).inner as FakeScheduler), close: async () => undefined }),
  image: 'example/app:1',
  serve: (delaySeconds) => `serve --after ${delaySeconds}`,
  notApplicable: {
    answers: EXECUTES_NOTHING,
    'failed-readiness-rollout': EXECUTES_NOTHING,
    'slow-start-web': EXECUTES_NOTHING,
    'slow-start-cmd': EXECUTES_NOTHING,
  },
});
