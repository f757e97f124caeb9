#!/usr/bin/env node
// Runs the README's shell blocks as a new user would, each walk against a fresh controller
// started with `npm start`, and fails at the first command that fails.
//
//   node scripts/readme-check.mjs [--walk cli|api|git]...
//
// The scheduler is the one the controller picks: with DOCKER_HOST naming an engine that
// answers, docker; else process (DOCKER_HOST=unix:///nonexistent is a machine without one).
// Only what must differ from a user's machine is substituted:
// - the ports (8000, 8080, 2222) by free ones, and `svc register` told the last two;
// - HOME: a fresh directory per walk (so `~/myapp` and `~/.ssh` are new), with an ed25519
//   key and an ssh config that accepts the git server's key on first use (the README says a
//   user confirms it; GIT_SSH_COMMAND points ssh at it), and `~/.local/bin` on PATH (where scripts/install-cli.sh links `svc`);
// - the password `svc register` asks for: SVC_PASSWORD;
// - whatever else the environment sets (e.g. a test's DOCKER_NETWORK on a shared engine);
// - `svc logs --follow` (stopped with Ctrl-C): interrupted after a few seconds.
// Every command runs under `set -e -o pipefail`; curl fails on an HTTP error, and a curl line
// whose comment is the expected answer (`curl URL   # hello from v1`) must print exactly it.
// Not run: `npm ci` (the checkout is installed), `npm test` (the suite that runs this
// script) and `docker compose up` (packages/server/test/compose.int.spec.ts).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';

const checkout = join(fileURLToPath(import.meta.url), '..', '..');
const { fetch } = globalThis;
const PASSWORD = 's3cret-pass';

/** The README's ```sh blocks, in order. */
export function shellBlocks(markdown) {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

/** Which walk a block is: `cli`, `api`, `git`, or a block that is not run (null). */
export function walkOf(block) {
  if (block.includes('scripts/install-cli.sh')) return 'cli';
  if (block.includes('/v1/apps/myapp/builds/')) return 'api';
  if (block.includes('git push svc main') && block.includes('/v1/keys/')) return 'git';
  return null;
}

/** The block as a bash script for these ports. */
export function scriptOf(block, ports) {
  const lines = block
    .replace(/127\.0\.0\.1:8000\b/g, `127.0.0.1:${ports.api}`)
    .replace(/:8080\b/g, `:${ports.router}`)
    .replace(/:2222\b/g, `:${ports.git}`)
    .split('\n')
    .map((line) => {
      if (/^svc register /.test(line)) return line.replace(/(^svc register \S+ [^#]*?)\s*(#.*)?$/, `$1 --git-port ${ports.git} --router-port ${ports.router}`);
      if (/^svc logs --follow\b/.test(line)) return `__interrupted ${line.replace(/\s*#.*$/, '')}`;
      const expected = /^(curl [^#]*?[^\\\s])\s+#\s+(.+?)(\s+\([^)]*\))?$/.exec(line);
      if (expected) return `__expect ${JSON.stringify(expected[2])} ${expected[1]}`;
      return line;
    });
  return [
    'set -e -o pipefail',
    'curl() { command curl --fail-with-body "$@"; }',
    '__expect() { local want="$1"; shift; local got; got="$("$@")"; echo "$got"; if [ "$got" != "$want" ]; then echo "readme-check: expected \\"$want\\", got \\"$got\\" from: $*" >&2; return 1; fi; }',
    '__interrupted() { local rc=0; timeout -s INT 5 "$@" || rc=$?; [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$rc" = 130 ]; }',
    ...lines,
  ].join('\n');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitReady(url, controller) {
  const deadline = Date.now() + 180_000;
  let last = '';
  while (Date.now() < deadline) {
    if (controller.exitCode !== null) throw new Error(`the controller exited with ${controller.exitCode}`);
    try {
      const res = await fetch(`${url}/readyz`);
      const body = await res.json();
      if (res.ok && body.status === 'ready') return body;
      last = JSON.stringify(body);
      if (body.status === 'degraded') throw new Error(`the controller cannot run apps: ${last}`);
    } catch (error) {
      if (String(error).includes('cannot run apps')) throw error;
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the controller was not ready within 180 s (${last})`);
}

/** Stops the controller (SIGTERM to `npm start`'s process group) and waits for it. */
async function stop(controller) {
  if (controller.exitCode !== null) return;
  const exited = new Promise((resolve) => controller.once('exit', resolve));
  try {
    process.kill(-controller.pid, 'SIGTERM');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-controller.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }, 30_000);
  await exited;
  clearTimeout(timer);
}

/** Runs one walk on a fresh controller and home; returns the walk's output. */
async function runWalk(name, block) {
  const work = mkdtempSync(join(tmpdir(), `svc-readme-${name}-`));
  const home = join(work, 'home');
  mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
  spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(home, '.ssh', 'id_ed25519')], { stdio: 'ignore' });
  const ssh = join(home, '.ssh');
  writeFileSync(
    join(ssh, 'config'),
    `Host 127.0.0.1\n  StrictHostKeyChecking accept-new\n  UserKnownHostsFile ${ssh}/known_hosts\n  IdentityFile ${ssh}/id_ed25519\n  IdentitiesOnly yes\n`,
    { mode: 0o600 },
  );
  writeFileSync(join(home, '.gitconfig'), '[user]\n  name = Alice\n  email = alice@example.com\n');
  const ports = { api: await freePort(), router: await freePort(), git: await freePort() };
  const env = {
    ...process.env,
    HOME: home,
    PATH: `${join(home, '.local', 'bin')}:${process.env.PATH}`,
    SVC_PASSWORD: PASSWORD,
    // ssh finds ~ in the user database, not in HOME: pointed at the walk's home.
    GIT_SSH_COMMAND: `ssh -F ${join(home, '.ssh', 'config')}`,
    PORT: String(ports.api),
    ROUTER_PORT: String(ports.router),
    GIT_SSH_PORT: String(ports.git),
    DATA_DIR: join(work, 'data'),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  };
  delete env.SVC_URL;
  delete env.SVC_TOKEN;
  const log = join(work, 'controller.log');
  const out = [];
  const controller = spawn('npm', ['start'], { cwd: checkout, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const logged = [];
  controller.stdout.on('data', (chunk) => logged.push(chunk));
  controller.stderr.on('data', (chunk) => logged.push(chunk));
  const url = `http://127.0.0.1:${ports.api}`;
  try {
    await waitReady(url, controller);
    const script = scriptOf(block, ports);
    const result = await new Promise((resolve) => {
      const child = spawn('bash', ['-c', script], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (chunk) => out.push(chunk));
      child.stderr.on('data', (chunk) => out.push(chunk));
      child.on('exit', (code) => resolve(code));
    });
    const output = Buffer.concat(out).toString();
    if (result !== 0) throw new Error(`the README's ${name} walk failed (exit ${result}):\n${output}`);
    return output;
  } catch (error) {
    writeFileSync(log, Buffer.concat(logged));
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- controller log (last lines) ---\n${Buffer.concat(logged).toString().split('\n').slice(-40).join('\n')}`);
  } finally {
    // The apps go with the controller, so that an engine keeps no containers of the walk.
    await cleanUp(url).catch(() => undefined);
    await stop(controller);
    rmSync(work, { recursive: true, force: true });
  }
}

async function cleanUp(url) {
  const login = await fetch(`${url}/v1/auth/login/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: 'alice', password: PASSWORD }) });
  if (!login.ok) return;
  const { token } = await login.json();
  await fetch(`${url}/v1/apps/myapp/`, { method: 'DELETE', headers: { Authorization: `token ${token}` } });
}

async function main() {
  const only = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--walk' ? [arg] : []));
  const blocks = shellBlocks(readFileSync(join(checkout, 'README.md'), 'utf8'));
  const walks = blocks.map((block) => [walkOf(block), block]).filter(([walk]) => walk !== null && (only.length === 0 || only.includes(walk)));
  if (!blocks.some((block) => /^npm ci && npm start$/m.test(block))) throw new Error('the README no longer starts the controller with `npm ci && npm start`: update scripts/readme-check.mjs');
  for (const name of ['cli', 'api', 'git']) {
    if (!blocks.some((block) => walkOf(block) === name)) throw new Error(`the README has no ${name} walk: update scripts/readme-check.mjs`);
  }
  for (const [name, block] of walks) {
    const started = Date.now();
    const output = await runWalk(name, block);
    process.stdout.write(`readme-check: the ${name} walk passed in ${Math.round((Date.now() - started) / 1000)} s\n`);
    if (process.env.README_CHECK_VERBOSE) process.stdout.write(output);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    process.stderr.write(`readme-check: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
