#!/usr/bin/env node
// Checks that package-lock.json can be installed by `npm ci` on every platform: every
// optional dependency of every locked package (the native bindings that exist for one
// operating system and processor each) must be in the lock, not only those of the machine
// that wrote it. `npm install` run over an existing node_modules can drop the bindings of
// other platforms; `npm ci` then refuses the lock as out of sync with package.json.
// Repair: `npm run lock` (see docs/operations.md, "Installing and the lock file").
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The project to check: the argument, or this repository.
const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const problems = [];

if (!lock.packages || lock.lockfileVersion < 2) problems.push(`lockfileVersion ${lock.lockfileVersion}: npm 7 or later writes version 3`);
const packages = lock.packages ?? {};

// Where Node (and npm) would find `name` from the package locked at `location`: its own
// node_modules, then those of every enclosing package, then the root's.
function resolves(location, name) {
  let base = location;
  for (;;) {
    if (packages[`${base ? `${base}/` : ''}node_modules/${name}`]) return true;
    if (base === '') return false;
    const cut = base.lastIndexOf('/node_modules/');
    // A workspace (`packages/core`) or a top-level package (`node_modules/x`) falls back to the root.
    base = cut === -1 ? '' : base.slice(0, cut);
  }
}

for (const [location, entry] of Object.entries(packages)) {
  if (entry.link) continue;
  for (const name of Object.keys(entry.optionalDependencies ?? {})) {
    if (!resolves(location, name)) problems.push(`${location || '(root)'}: optional dependency ${name} is not in the lock`);
  }
}

// Every workspace of package.json is locked (a workspace added without re-locking is not).
for (const workspace of manifest.workspaces ?? []) {
  if (!packages[workspace]) problems.push(`workspace ${workspace} is not in the lock`);
}

if (problems.length > 0) {
  process.stderr.write(`package-lock.json cannot be installed with npm ci on every platform:\n`);
  for (const problem of problems.slice(0, 20)) process.stderr.write(`  ${problem}\n`);
  if (problems.length > 20) process.stderr.write(`  ... and ${problems.length - 20} more\n`);
  process.stderr.write('Repair it with `npm run lock` and commit package-lock.json.\n');
  process.exit(1);
}
process.stdout.write(`package-lock.json: ${Object.keys(packages).length} entries, every platform's optional packages locked\n`);
