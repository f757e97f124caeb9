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
  // Two test files at a time: most integration and end-to-end suites wait on engines,
  // processes and the network, so two of them share a two-core machine well.
  maxWorkers: 2,
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
