import { FakeScheduler, describeSchedulerContract } from '@svc/core/testing';

// The test double answers for what the port promises about bookkeeping; it executes nothing.
describeSchedulerContract('FakeScheduler', {
  open: async () => ({ scheduler: new FakeScheduler(), close: async () => undefined }),
  image: 'example/app:1',
  listen: 'serve',
  executes: false,
});
