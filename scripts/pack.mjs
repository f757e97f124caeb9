#!/usr/bin/env node
// `npm run pack`: compiles the packages (tsc -b, as `npm run build`), then writes one tarball
// per package of the workspace into artifacts/packages/ (or the folder given with --out), the
// files `npm install <tarball>` and `npm publish <tarball>` take, and checks what each holds:
// package.json, README.md, LICENSE, CHANGELOG.md, the compiled JavaScript with its
// declarations and maps, the TypeScript sources the maps point to, the files a package reads
// at run time (the buildpacks, the stack image's script, the dashboard's pages), and nothing
// else: no test, no tsbuildinfo, no output left by a source since removed. Prints one line
// per tarball (name, packed and unpacked size, files); a problem stops it with status 1.
//
// Usage: node scripts/pack.mjs [--out DIR] [--no-build]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const out = resolve(outIndex === -1 ? join(root, 'artifacts', 'packages') : (args[outIndex + 1] ?? ''));
const say = (line) => process.stderr.write(`${line}\n`);

// What a package reads at run time from its own folder, beside its code: each must be in its
// tarball, and the scripts among them executable.
const RUNTIME_FILES = {
  '@svc/buildpacks-git': ['buildpacks/node/bin/detect', 'buildpacks/node/bin/compile', 'buildpacks/node/bin/release', 'buildpacks/python/bin/detect', 'buildpacks/python/bin/compile', 'buildpacks/python/bin/release', 'buildpacks/python/lib/compile.py', 'buildpacks/go/bin/detect', 'buildpacks/go/bin/compile', 'buildpacks/go/bin/release', 'buildpacks/ruby/bin/detect', 'buildpacks/ruby/bin/compile', 'buildpacks/ruby/bin/release', 'buildpacks/static/bin/detect', 'buildpacks/static/bin/compile', 'buildpacks/static/bin/release', 'buildpacks/static/lib/static-server.js', 'buildpacks/plain/bin/detect', 'buildpacks/plain/bin/compile', 'buildpacks/plain/bin/release'],
  '@svc/scheduler-docker': ['scripts/make-stack-image.sh'],
  '@svc/dashboard': ['public/index.html', 'public/js/main.js'],
  '@svc/cli': ['bin/svc.js'],
};
const EXECUTABLE = /(^|\/)(bin\/[^/]+|[^/]+\.sh)$/;
const FORBIDDEN = [
  [/(^|\/)test\//, 'a test folder'],
  [/\.(spec|test)\.[cm]?[jt]s$/, 'a test'],
  [/\.tsbuildinfo$/, 'compiler state'],
  [/(^|\/)node_modules\//, 'node_modules'],
  [/(^|\/)tsconfig[^/]*\.json$/, 'a tsconfig'],
];

function run(command, commandArgs, options = {}) {
  const outcome = spawnSync(command, commandArgs, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (outcome.error) throw outcome.error;
  return outcome;
}

function build() {
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  const began = Date.now();
  const outcome = run(process.execPath, [tsc, '-b', join(root, 'tsconfig.json')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (outcome.status !== 0) {
    say(`pack: the build failed (tsc -b, status ${outcome.status}): nothing packed`);
    process.exit(outcome.status ?? 1);
  }
  say(`pack: built in ${((Date.now() - began) / 1000).toFixed(1)} s`);
}

function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

// Compiled files whose source is gone: tsc -b writes outputs but never removes them.
function staleOutputs(packageDir) {
  const tsconfig = join(packageDir, 'tsconfig.json');
  if (!existsSync(tsconfig)) return [];
  const options = JSON.parse(readFileSync(tsconfig, 'utf8')).compilerOptions ?? {};
  const outDir = join(packageDir, options.outDir ?? 'dist');
  const rootDir = join(packageDir, options.rootDir ?? 'src');
  const declarationDir = options.declarationDir ? join(packageDir, options.declarationDir) : null;
  return [outDir, ...(declarationDir ? [declarationDir] : [])].flatMap((dir) =>
    filesUnder(dir)
      .filter((file) => /\.(js|d\.ts)(\.map)?$/.test(file))
      .filter((file) => {
        const stem = relative(dir, file).replace(/(\.d\.ts|\.js)(\.map)?$/, '');
        return !existsSync(join(rootDir, `${stem}.ts`)) && !existsSync(join(rootDir, `${stem}.tsx`));
      })
      .map((file) => relative(root, file)),
  );
}

// Every path the manifest names (main, types, bin, exports) must be in the tarball.
function entryPoints(manifest) {
  const targets = [manifest.main, manifest.types, ...Object.values(manifest.bin ?? {})];
  const walk = (value) => (typeof value === 'string' ? [value] : value && typeof value === 'object' ? Object.values(value).flatMap(walk) : []);
  return [...targets, ...walk(manifest.exports)].filter((target) => typeof target === 'string').map((target) => target.replace(/^\.\//, ''));
}

function problemsOf(packed, manifest) {
  const paths = new Set(packed.files.map((file) => file.path));
  const modes = new Map(packed.files.map((file) => [file.path, file.mode]));
  const problems = [];
  for (const needed of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', ...entryPoints(manifest), ...(RUNTIME_FILES[manifest.name] ?? [])]) {
    if (!paths.has(needed)) problems.push(`${needed} is missing`);
  }
  for (const path of paths) {
    const forbidden = FORBIDDEN.find(([pattern]) => pattern.test(path));
    if (forbidden) problems.push(`${path}: ${forbidden[1]} is not shipped`);
    if (path.startsWith('src/') && !path.endsWith('.ts')) problems.push(`${path}: only TypeScript sources (for the maps) are shipped from src/`);
    if (path.startsWith('dist/') && !/\.(js|d\.ts)(\.map)?$/.test(path)) problems.push(`${path}: dist/ ships compiled output only (.js, .d.ts and their maps)`);
    if (manifest.types && path.startsWith('dist/') && path.endsWith('.js') && !paths.has(path.replace(/\.js$/, '.d.ts'))) problems.push(`${path} has no declarations`);
    if (EXECUTABLE.test(path) && (RUNTIME_FILES[manifest.name] ?? []).includes(path) && ((modes.get(path) ?? 0) & 0o111) === 0) problems.push(`${path} is not executable`);
  }
  if (manifest.private) problems.push('it is private: it could not be published');
  return problems;
}

const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`;

function main() {
  if (!args.includes('--no-build')) build();
  const workspaces = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
  const stale = workspaces.flatMap((workspace) => staleOutputs(join(root, workspace)));
  if (stale.length > 0) {
    say(`pack: compiled files without a source (remove the package's dist/ and build again):\n  ${stale.join('\n  ')}`);
    process.exit(1);
  }
  mkdirSync(out, { recursive: true });
  for (const old of readdirSync(out).filter((name) => /^svc-.*\.tgz$/.test(name))) rmSync(join(out, old));
  // npm runs each package's prepack and postpack (the copies of scripts/package-files.mjs).
  const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
  const packing = run(npm[0], [...npm[1], 'pack', '--workspaces', '--json', '--pack-destination', out], { stdio: ['ignore', 'pipe', 'inherit'] });
  if (packing.status !== 0) {
    say(`pack: npm pack failed (status ${packing.status})`);
    process.exit(packing.status ?? 1);
  }
  const results = JSON.parse(packing.stdout);
  const manifests = new Map(workspaces.map((workspace) => JSON.parse(readFileSync(join(root, workspace, 'package.json'), 'utf8'))).map((manifest) => [manifest.name, manifest]));
  let failed = false;
  let total = 0;
  for (const packed of results) {
    const problems = problemsOf(packed, manifests.get(packed.name));
    const size = statSync(join(out, packed.filename)).size;
    total += size;
    process.stdout.write(`${packed.filename.padEnd(40)} ${kB(size).padStart(10)}  (${kB(packed.unpackedSize)} unpacked, ${packed.files.length} files)\n`);
    for (const problem of problems) say(`  ${packed.name}: ${problem}`);
    failed ||= problems.length > 0;
  }
  const where = relative(process.cwd(), out);
  process.stdout.write(`${results.length} tarballs, ${kB(total)}, in ${where.startsWith('..') ? out : where || '.'}\n`);
  if (failed) {
    say('pack: the tarballs above do not hold what they should');
    process.exit(1);
  }
}

main();
