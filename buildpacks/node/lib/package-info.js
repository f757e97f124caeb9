'use strict';
/*
 * What the Node.js buildpack's shell scripts need to know from an app's package.json, as
 * subcommands (each reads BUILD_DIR/package.json):
 *
 *   node package-info.js engines BUILD_DIR SEMVER_DIR   exit 1 with the reason when engines.node
 *                                                        does not admit the running node
 *   node package-info.js has-script BUILD_DIR NAME      exit 0 when scripts[NAME] is set
 *   node package-info.js has-dev-dependencies BUILD_DIR exit 0 when devDependencies is not empty
 *   node package-info.js cache-key BUILD_DIR NPM_VERSION the hash of what decides node_modules
 *   node package-info.js needs-npm BUILD_DIR            exit 0 when npm has work to do: a dependency
 *                                                        of any kind, a lockfile, a build script or
 *                                                        engines.node to check
 *   node package-info.js release BUILD_DIR              bin/release's YAML
 *   node package-info.js plan BUILD_DIR NPM_DIR OUT     all of the above a compile needs, in one
 *                                                        run: checks engines.node (exit 1 when it
 *                                                        fails), writes shell assignments to OUT
 *
 * A package.json that is not a JSON object is refused (exit 1) with the parser's reason.
 */
const { createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');

const LOCKFILES = ['npm-shrinkwrap.json', 'package-lock.json'];
// The package.json fields an install's result depends on, besides the lockfile.
const INSTALL_FIELDS = [
  'dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies',
  'bundledDependencies', 'overrides', 'workspaces', 'os', 'cpu',
];
// Install-time scripts of the app itself: they run during `npm ci` and may change node_modules.
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

function refuse(message) {
  process.stderr.write(` !     ${message}\n`);
  process.exit(1);
}

function readPackage(buildDir) {
  let text;
  try {
    text = readFileSync(join(buildDir, 'package.json'), 'utf8');
  } catch (error) {
    return refuse(`package.json cannot be read: ${error.code || error.message}`);
  }
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return refuse(`package.json is not valid JSON: ${error.message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return refuse('package.json is not a JSON object');
  }
  return parsed;
}

function objectField(pkg, name) {
  const value = pkg[name];
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

function hasScript(pkg, name) {
  const script = objectField(pkg, 'scripts')[name];
  return typeof script === 'string' && script.trim() !== '';
}

function engines(buildDir, semverDir) {
  const pkg = readPackage(buildDir);
  const range = objectField(pkg, 'engines').node;
  const running = process.version;
  if (range === undefined || range === null || (typeof range === 'string' && range.trim() === '')) {
    process.stdout.write(`       engines.node is not set in package.json: using the stack's Node.js ${running}\n`);
    return;
  }
  if (typeof range !== 'string') return refuse('package.json\'s engines.node is not a string (a semver range such as ">=20")');
  let semver;
  try {
    semver = require(semverDir);
  } catch (error) {
    return refuse(`The semver module of npm cannot be loaded from ${semverDir}: ${error.message}`);
  }
  if (semver.validRange(range) === null) {
    return refuse(`package.json's engines.node (${JSON.stringify(range)}) is not a valid semver range`);
  }
  if (!semver.satisfies(running, range)) {
    return refuse(`package.json asks for Node.js ${range} (engines.node); this platform's stack has ${running}`);
  }
  process.stdout.write(`       engines.node ${range}: the stack's Node.js ${running} satisfies it\n`);
}

function cacheKey(buildDir, npmVersion) {
  const pkg = readPackage(buildDir);
  const hash = createHash('sha256');
  const part = (label, value) => hash.update(`${label}\0${value}\0`);
  part('format', '1');
  part('node', `${process.version} ${process.platform} ${process.arch}`);
  part('npm', npmVersion || '');
  for (const field of INSTALL_FIELDS) part(`package.json ${field}`, JSON.stringify(pkg[field] ?? null));
  const scripts = objectField(pkg, 'scripts');
  for (const script of INSTALL_SCRIPTS) part(`script ${script}`, JSON.stringify(scripts[script] ?? null));
  // The first lockfile npm would read decides the tree; .npmrc may change the registry or options.
  const lockfile = LOCKFILES.find((name) => existsSync(join(buildDir, name)));
  part('lockfile', lockfile === undefined ? '' : `${lockfile}\0${readFileSync(join(buildDir, lockfile), 'utf8')}`);
  const npmrc = join(buildDir, '.npmrc');
  part('.npmrc', existsSync(npmrc) ? readFileSync(npmrc, 'utf8') : '');
  process.stdout.write(`${hash.digest('hex')}\n`);
}

function needsNpm(buildDir) {
  const pkg = readPackage(buildDir);
  const dependencies = INSTALL_FIELDS.some((field) => {
    const value = pkg[field];
    return Array.isArray(value) ? value.length > 0 : value !== null && typeof value === 'object' && Object.keys(value).length > 0;
  });
  const lockfile = LOCKFILES.some((name) => existsSync(join(buildDir, name)));
  const engine = objectField(pkg, 'engines').node;
  const checks = engine !== undefined && engine !== null && engine !== '';
  return dependencies || lockfile || checks || hasScript(pkg, 'build') || INSTALL_SCRIPTS.some((script) => hasScript(pkg, script));
}

function release(buildDir) {
  const pkg = readPackage(buildDir);
  // `npm start` runs scripts.start, or `node server.js` when there is none and server.js exists.
  if (hasScript(pkg, 'start') || existsSync(join(buildDir, 'server.js'))) {
    process.stdout.write('---\ndefault_process_types:\n  web: npm start\n');
  } else {
    process.stdout.write('--- {}\n');
  }
}

/** The npm of NPM_DIR's version, from its own package.json (no npm process to start). */
function npmVersion(npmDir) {
  try {
    const version = JSON.parse(readFileSync(join(npmDir, 'package.json'), 'utf8')).version;
    return typeof version === 'string' && /^[0-9A-Za-z.+-]{1,64}$/.test(version) ? version : null;
  } catch {
    return null;
  }
}

/**
 * What a compile needs to know, decided by one node process: whether npm has work, npm's
 * version, the cache key, the build script and devDependencies, with engines.node checked.
 * The answers go to OUT as shell assignments (values this script makes, never the app's text).
 */
function plan(buildDir, npmDir, out) {
  const { writeFileSync } = require('node:fs');
  const pkg = readPackage(buildDir);
  const assignments = { bp_needs_npm: needsNpm(buildDir) ? '1' : '0', bp_npm_version: '', bp_key: '', bp_has_build: '0', bp_has_dev: '0' };
  if (assignments.bp_needs_npm === '1') {
    if (!npmDir) return refuse('npm is not on PATH: the stack must provide npm');
    // npm ships its own semver; a wrapper named npm is no npm directory: then npm is looked
    // for where node's installation keeps its global packages.
    const isNpm = (dir) => npmVersion(dir) !== null && existsSync(join(dir, 'node_modules', 'semver', 'package.json'));
    const beside = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm');
    const found = [npmDir, beside].find(isNpm);
    if (found === undefined) return refuse(`npm's own files (its package.json and semver module) are not found in ${npmDir} or ${beside}`);
    npmDir = found;
    const version = npmVersion(npmDir);
    process.stdout.write('-----> Checking the Node.js version\n');
    process.stdout.write(`       Stack: Node.js ${process.version}, npm ${version}\n`);
    engines(buildDir, join(npmDir, 'node_modules', 'semver'));
    assignments.bp_npm_version = version;
    assignments.bp_has_build = hasScript(pkg, 'build') ? '1' : '0';
    assignments.bp_has_dev = Object.keys(objectField(pkg, 'devDependencies')).length > 0 ? '1' : '0';
    const key = [];
    const write = process.stdout.write;
    process.stdout.write = (text) => key.push(String(text));
    try {
      cacheKey(buildDir, version);
    } finally {
      process.stdout.write = write;
    }
    assignments.bp_key = key.join('').trim();
  }
  writeFileSync(out, Object.entries(assignments).map(([name, value]) => `${name}='${value}'\n`).join(''), { mode: 0o600 });
}

function main(argv) {
  const [command, buildDir, extra] = argv;
  if (buildDir === undefined) return refuse('usage: package-info.js COMMAND BUILD_DIR [ARG]');
  switch (command) {
    case 'engines':
      return engines(buildDir, extra);
    case 'has-script':
      return process.exit(hasScript(readPackage(buildDir), extra) ? 0 : 1);
    case 'has-dev-dependencies':
      return process.exit(Object.keys(objectField(readPackage(buildDir), 'devDependencies')).length > 0 ? 0 : 1);
    case 'cache-key':
      return cacheKey(buildDir, extra);
    case 'needs-npm':
      return process.exit(needsNpm(buildDir) ? 0 : 1);
    case 'plan':
      return plan(buildDir, extra, argv[3]);
    case 'release':
      return release(buildDir);
    default:
      return refuse(`package-info.js: unknown command '${command}'`);
  }
}

main(process.argv.slice(2));
