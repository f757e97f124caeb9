import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const adapters = [
  'express', 'express/*', 'typeorm', 'typeorm/*', 'inversify', 'reflect-metadata', 'class-validator',
  'class-transformer', 'ssh2', 'node-forge', 'pg', 'better-sqlite3', 'pino', '@svc/*',
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'data/**', 'coverage/**', 'packages/cli/.e2e-build-*/**', 'packages/dashboard/public/js/**', 'artifacts/**', 'packages/buildpacks-git/buildpacks/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The core is a pure library: no framework, no adapter, no I/O module.
    files: ['packages/core/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: adapters, message: 'packages/core must not import frameworks or adapters.' }],
        paths: ['fs', 'node:fs', 'http', 'node:http', 'child_process', 'node:child_process', 'net', 'node:net'],
      }],
    },
  },
  {
    // Adapters depend on the core only (and the schedulers on their shared Node kit), never on each other.
    files: ['packages/!(core|server)/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '^@svc/(?!(core|supervisor-node)$)', message: 'Adapters depend on @svc/core (and @svc/supervisor-node) only.' }],
      }],
    },
  },
  {
    // The installed `svc` command: a CommonJS shim that runs the compiled client.
    files: ['packages/cli/bin/*.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly' } },
  },
  {
    // The built-in buildpacks' helpers: CommonJS scripts run by the stack's node, writing to stdout.
    files: ['buildpacks/**/*.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly' } },
  },
  {
    files: ['bench/**/*.{js,mjs,ts}', '.ci/**/*.js', 'scripts/**/*.mjs', 'examples/**/*.ts'],
    rules: { 'no-console': 'off' },
    languageOptions: { globals: { require: 'readonly', process: 'readonly', console: 'readonly', module: 'writable', __dirname: 'readonly' } },
  },
);
