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
 *
 * A package.json that is not a JSON object is refused (exit 1) with the parser's reason.
 */
const { createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

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
    case 'release':
      return release(buildDir);
    default:
      return refuse(`package-info.js: unknown command '${command}'`);
  }
}

main(process.argv.slice(2));
