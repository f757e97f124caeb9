import { CONTRACT_FAILING_COMMAND, FakeScheduler, describeSchedulerContract, describeSchedulerScenarios } from '@svc/core/testing';

/** The fake refuses what a test tells it to: here, one image, as an engine refuses one it cannot get. */
function refusingFake(): FakeScheduler {
  const scheduler = new FakeScheduler();
  scheduler.refuseToRun((build) => build.image === 'example/absent:1', 'image example/absent:1 cannot be pulled: not found');
  return scheduler;
}

// The test double answers for what the port promises about bookkeeping; it executes nothing.
describeSchedulerContract('FakeScheduler', {
  open: async () => ({ scheduler: refusingFake(), close: async () => undefined }),
  image: 'example/app:1',
  listen: 'serve',
  executes: false,
  unrunnable: [{ what: 'an image it was told it cannot get', build: { image: 'example/absent:1' }, reason: /^image example\/absent:1 cannot be pulled/ }],
});

const EXECUTES_NOTHING = 'the test double executes nothing: a start is up at once, no process listens, waits or answers';

describeSchedulerScenarios('FakeScheduler', {
  open: async () => {
    const scheduler = new FakeScheduler();
    // What the fake has instead of a process that exits before it listens.
    scheduler.failStartOf((spec) => spec.command === CONTRACT_FAILING_COMMAND, new Error('it exited with code 3 before it was up'));
    return { scheduler, close: async () => undefined };
  },
  image: 'example/app:1',
  serve: (delaySeconds) => `serve --after ${delaySeconds}`,
  notApplicable: {
    answers: EXECUTES_NOTHING,
    'failed-readiness-rollout': EXECUTES_NOTHING,
    'slow-start-web': EXECUTES_NOTHING,
    'slow-start-cmd': EXECUTES_NOTHING,
    adopt: 'the test double keeps its containers in the instance: a second instance has its own, nothing runs that could outlive the first',
  },
});
