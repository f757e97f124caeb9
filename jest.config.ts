import type { Config } from 'jest';

// Tests run from TypeScript sources: workspace imports resolve to each package's src,
// so no build is needed first. Type checking is `npm run typecheck`'s job; ts-jest only
// transpiles each file on its own (`isolatedModules: true` in tsconfig.check.json, which
// ts-jest reads), which keeps the suite fast on a two-core machine.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lanes = require('./scripts/test-lanes.cjs') as { testWorkers(): number };

const shared = {
  preset: 'ts-jest',
  // Node's environment, holding a CPU slot while a busy file runs (scripts/test-lanes.cjs).
  testEnvironment: '<rootDir>/scripts/test-environment.cjs',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.check.json' }],
  },
  moduleNameMapper: {
    '^@svc/core/testing$': '<rootDir>/packages/core/src/testing/index.ts',
    '^@svc/([a-z0-9-]+)$': '<rootDir>/packages/$1/src/index.ts',
  },
  rootDir: '.',
};

const config: Config = {
  // Test files run side by side, as many busy ones as there are cores (two to four; more ran
  // each file slower on two cores, with no gain), each holding a CPU slot while it runs, and
  // one more worker for the files that mostly wait (those driving the Docker Swarm): they run
  // beside the busy ones and hold no slot (scripts/test-lanes.cjs). One Docker engine and one
  // swarm serve them all. What files share is kept apart: the files that drain a swarm node
  // hold the swarm's lock exclusively, those running tasks on it hold it shared
  // (packages/scheduler-docker/test/support/host-lock.ts); each file makes its own networks,
  // bridges, build network, instance labels, port range and databases. TEST_CPU_SLOTS sets the
  // slots, TEST_WORKERS the workers (1 runs the files one at a time).
  maxWorkers: lanes.testWorkers(),
  // The longest files first, and those that would only wait for each other's swarm lock apart.
  testSequencer: '<rootDir>/scripts/test-sequencer.mjs',
  projects: [
    {
      ...shared,
      displayName: 'unit',
      testMatch: ['<rootDir>/packages/*/test/**/*.spec.ts'],
      testPathIgnorePatterns: ['\\.int\\.spec\\.ts$', '\\.e2e\\.spec\\.ts$'],
    },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/packages/*/test/**/*.int.spec.ts'],
    },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/packages/*/test/**/*.e2e.spec.ts'],
    },
  ],
};

export default config;
