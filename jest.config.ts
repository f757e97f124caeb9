import { availableParallelism } from 'node:os';
import type { Config } from 'jest';

// Tests run from TypeScript sources: workspace imports resolve to each package's src,
// so no build is needed first. Type checking is `npm run typecheck`'s job; ts-jest only
// transpiles each file on its own (`isolatedModules: true` in tsconfig.check.json, which
// ts-jest reads), which keeps the suite fast on a two-core machine.
const shared = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.check.json' }],
  },
  moduleNameMapper: {
    '^@svc/core/testing$': '<rootDir>/packages/core/src/testing/index.ts',
    '^@svc/([a-z0-9-]+)$': '<rootDir>/packages/$1/src/index.ts',
  },
  rootDir: '.',
};

/** TEST_WORKERS when it is a whole number from 1 to 8, else two to four by the cores. */
function testWorkers(setting: string | undefined): number {
  const wanted = Number(setting);
  if (setting !== undefined && Number.isInteger(wanted) && wanted >= 1 && wanted <= 8) return wanted;
  return Math.min(4, Math.max(2, availableParallelism()));
}

const config: Config = {
  // Test files run side by side, two at least even on two cores: much of a file's time is spent
  // waiting for engines, servers, databases and child processes. (Three on two cores ran each
  // file about twice as slow: the cores are busy enough with two.) At most four:
  // one Docker engine and one swarm serve them all. What files share is kept apart: the files
  // that drain a swarm node hold the swarm's lock exclusively, those running tasks on it hold
  // it shared (packages/scheduler-docker/test/support/host-lock.ts); each file makes its own
  // networks, bridges, build network, instance labels, port range and databases.
  // TEST_WORKERS sets the number (1 runs the files one at a time).
  maxWorkers: testWorkers(process.env.TEST_WORKERS),
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
