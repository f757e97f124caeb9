import { describeSchedulerContract, describeSchedulerScenarios } from '@svc/core/testing';
import { MemoryScheduler } from '@svc/scheduler-memory';

// The memory scheduler runs nothing: it answers for the port's bookkeeping, as the test double does.
describeSchedulerContract('MemoryScheduler', {
  open: async () => ({ scheduler: new MemoryScheduler(), close: async () => undefined }),
  image: 'example/app:1',
  listen: 'serve',
  executes: false,
});

const RUNS_NOTHING = 'the memory scheduler runs nothing: every start is up at once, no process listens, waits, fails or answers';

describeSchedulerScenarios('MemoryScheduler', {
  open: async () => ({ scheduler: new MemoryScheduler(), close: async () => undefined }),
  image: 'example/app:1',
  serve: (delaySeconds) => `serve --after ${delaySeconds}`,
  notApplicable: {
    answers: RUNS_NOTHING,
    'failed-start-rollout': RUNS_NOTHING,
    'failed-readiness-rollout': RUNS_NOTHING,
    'slow-start-web': RUNS_NOTHING,
    'slow-start-cmd': RUNS_NOTHING,
    adopt: 'the memory scheduler keeps its containers in the instance: a second instance has its own, nothing runs that could outlive the first',
  },
});
