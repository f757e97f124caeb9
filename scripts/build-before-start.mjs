#!/usr/bin/env node
// Compiles the TypeScript packages before `npm start` (its `prestart`), saying what it does:
// `tsc -b` compiles only the packages whose sources changed since the last build (each keeps
// its incremental state in its tsbuildinfo), which on a fresh checkout is all of them and
// takes about a minute. Each package is named as it is compiled; the last line says how many
// were compiled and how long it took, or that nothing changed. Compiler errors are printed as
// tsc prints them, and the exit status is tsc's.
//
// Usage: node scripts/build-before-start.mjs [tsconfig.json of the build, default the repository's]
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const project = process.argv[2] ?? join(root, 'tsconfig.json');
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
const say = (line) => process.stderr.write(`${line}\n`);

// tsc -b --verbose says each project's state on a line of its own, after a time stamp
// ("5:34:33 AM - " or "[5:34:33 AM] "); anything else is the compiler's own output.
const STATUS = /^(?:\[[^\]]*\]|\d{1,2}:\d{2}:\d{2}(?: [AP]M)? -) (.*)$/;
const BUILDING = /^Building project '(.+)'\.\.\.$/;
// Under "Projects in this build:", one line per project: the packages and the build's own file.
const LISTED = /^\s+\* (.+)$/;
// eslint-disable-next-line no-control-regex
const COLOURS = /\x1b\[[0-9;]*m/g;

const began = Date.now();
const seconds = () => `${((Date.now() - began) / 1000).toFixed(1)} s`;
const child = spawn(process.execPath, [tsc, '-b', project, '--verbose'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
let compiled = 0;
let packages = 0;
let pending = '';

function line(text) {
  const plain = text.replace(COLOURS, '');
  if (LISTED.test(plain)) {
    packages += 1;
    return;
  }
  const status = STATUS.exec(plain);
  if (status === null) {
    if (plain.trim() !== '') say(text);
    return;
  }
  const building = BUILDING.exec(status[1]);
  if (building === null) return;
  if (compiled === 0) say('compiling the TypeScript packages that changed (all of them the first time: about a minute)...');
  compiled += 1;
  say(`  ${relative(root, dirname(building[1])) || '.'}`);
}

child.stdout.on('data', (chunk) => {
  pending += chunk.toString('utf8');
  let end;
  while ((end = pending.indexOf('\n')) >= 0) {
    line(pending.slice(0, end).trimEnd());
    pending = pending.slice(end + 1);
  }
});
child.stderr.on('data', (chunk) => process.stderr.write(chunk));
child.on('close', (code) => {
  if (pending !== '') line(pending.trimEnd());
  if (code !== 0) {
    say(`the TypeScript packages did not compile (tsc -b exited with ${code ?? 'a signal'}); see the errors above`);
    process.exit(code ?? 1);
  }
  // The build's own file is listed with its packages.
  const of = packages > 1 ? ` of ${packages - 1}` : '';
  say(compiled === 0 ? `TypeScript packages: nothing changed since the last build (${seconds()})` : `compiled ${compiled}${of} package${compiled === 1 && of === '' ? '' : 's'} in ${seconds()}`);
});
