import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InstalledBuildpack } from '@svc/core';

/** The scripts of a test buildpack (POSIX sh bodies, without the `#!` line). */
export interface BuildpackScripts {
  detect?: string;
  compile: string;
  release?: string;
  /** More files of the buildpack, by path relative to its directory. */
  files?: Record<string, string>;
}

const made: string[] = [];

/** Removes the buildpacks `fixtureBuildpack` wrote. */
export async function removeFixtureBuildpacks(): Promise<void> {
  for (const root of made.splice(0)) await rm(root, { recursive: true, force: true });
}

/**
 * Writes a buildpack with the Heroku contract into a fresh directory that every user may read,
 * as an installed buildpack's is.
 */
export async function fixtureBuildpack(name: string, scripts: BuildpackScripts): Promise<InstalledBuildpack> {
  const root = await mkdtemp(join(tmpdir(), 'svc-buildpack-'));
  made.push(root);
  const directory = join(root, name);
  await mkdir(join(directory, 'bin'), { recursive: true });
  const bodies = {
    detect: scripts.detect ?? `echo ${name}`,
    compile: scripts.compile,
    release: scripts.release ?? `printf -- '---\\ndefault_process_types:\\n  web: node server.js\\n'`,
  };
  for (const [step, body] of Object.entries(bodies)) {
    await writeFile(join(directory, 'bin', step), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }
  for (const [path, text] of Object.entries(scripts.files ?? {})) {
    await mkdir(join(directory, path, '..'), { recursive: true });
    await writeFile(join(directory, path), text, { mode: 0o644 });
  }
  for (const dir of [root, directory, join(directory, 'bin')]) await chmod(dir, 0o755);
  return { name, directory };
}

/** A compile that runs `npm ci` with its cache in CACHE_DIR, as a node buildpack does. */
export const NPM_CI_COMPILE = `set -e
cd "$1"
export npm_config_cache="$2/npm"
npm ci --no-audit --no-fund $(cat "$3/NPM_FLAGS" 2>/dev/null)
echo "installed as $(id -u)"`;

const LOCAL_DEP = { 'local-dep/package.json': '{ "name": "local-dep", "version": "1.0.0", "main": "index.js" }\n', 'local-dep/index.js': "module.exports = 'local dependency';\n" };

/** An app whose only dependency is a `file:` one: `npm ci --offline` installs it. */
export const OFFLINE_APP: Record<string, string> = {
  ...LOCAL_DEP,
  'package.json': JSON.stringify({ name: 'offline-app', version: '1.0.0', private: true, dependencies: { 'local-dep': 'file:./local-dep' } }),
  'package-lock.json': JSON.stringify({
    name: 'offline-app',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'offline-app', version: '1.0.0', dependencies: { 'local-dep': 'file:./local-dep' } },
      'local-dep': { version: '1.0.0' },
      'node_modules/local-dep': { resolved: 'local-dep', link: true },
    },
  }),
};

/** An app with a `file:` dependency and one tiny dependency from the registry. */
export const REGISTRY_APP: Record<string, string> = {
  ...LOCAL_DEP,
  'package.json': JSON.stringify({ name: 'registry-app', version: '1.0.0', private: true, dependencies: { 'is-number': '7.0.0', 'local-dep': 'file:./local-dep' } }),
  'package-lock.json': JSON.stringify({
    name: 'registry-app',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'registry-app', version: '1.0.0', dependencies: { 'is-number': '7.0.0', 'local-dep': 'file:./local-dep' } },
      'local-dep': { version: '1.0.0' },
      'node_modules/is-number': {
        version: '7.0.0',
        resolved: 'https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz',
        integrity: 'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==',
        license: 'MIT',
        engines: { node: '>=0.12.0' },
      },
      'node_modules/local-dep': { resolved: 'local-dep', link: true },
    },
  }),
};

/** Writes `files` into `dir` (created). */
export async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
}
