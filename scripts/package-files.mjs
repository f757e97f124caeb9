#!/usr/bin/env node
// The `prepack` and `postpack` of the packages that ship files kept at the repository's root
// (@svc/buildpacks-git the built-in buildpacks, @svc/scheduler-docker the stack image's
// script): `add` copies each named path from the root into the package, at the same relative
// path, before npm packs it; `remove` deletes those copies afterwards. In a checkout the
// package's code reads the repository's file; installed (node_modules/@svc/…), its own copy.
// The copies are ignored by git.
//
// Usage (run by npm in the package's directory): node ../../scripts/package-files.mjs add|remove PATH...
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [action, ...paths] = process.argv.slice(2);
const fail = (message) => {
  process.stderr.write(`package-files: ${message}\n`);
  process.exit(1);
};

if ((action !== 'add' && action !== 'remove') || paths.length === 0) fail('usage: package-files.mjs add|remove PATH...');
const packageDir = process.cwd();
if (normalize(join(packageDir, '..', '..')) !== normalize(root)) fail(`run it in a package of ${root}/packages, not in ${packageDir}`);

for (const path of paths) {
  if (isAbsolute(path) || normalize(path).startsWith('..')) fail(`${path}: a path inside the repository is expected`);
  const source = join(root, path);
  const copy = join(packageDir, path);
  if (action === 'add') {
    if (!existsSync(source)) fail(`${source} is missing: the package cannot ship it`);
    rmSync(copy, { recursive: true, force: true });
    // Modes are kept: the buildpacks' bin/* and the script stay executable in the tarball.
    cpSync(source, copy, { recursive: true });
  } else {
    rmSync(copy, { recursive: true, force: true });
    // And the directories made for it (scripts/ for scripts/make-stack-image.sh), once empty.
    for (let dir = dirname(copy); dir !== packageDir && existsSync(dir) && readdirSync(dir).length === 0; dir = dirname(dir)) rmSync(dir, { recursive: true });
  }
}
