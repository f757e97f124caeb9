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

const config: Config = {
  // One test file at a time, on any machine: the Docker and Swarm suites share one engine and
  // one swarm, and two of them drain and restore the same swarm node (swarm-scheduler.int and
  // swarm.e2e); run side by side, one placed its replicas on one node, most likely while the
  // other had drained the worker.
  maxWorkers: 1,
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
