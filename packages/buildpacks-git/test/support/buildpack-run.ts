/// <reference types="jest" />
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { BUILTIN_BUILDPACKS_DIR } from '../../src';

/*
 * Runs the built-in buildpacks' scripts as a build runner would: with a PATH that has node
 * and npm, HOME unset, and a recording `npm` first on PATH (each call's arguments go to a
 * file, then the real npm runs), under one of two shells:
 *   - `sh`: the host's /bin/sh (Debian's dash) and the host's commands, as the process
 *     scheduler's sandbox runs them;
 *   - `busybox`: busybox's sh with nothing on PATH but busybox's applets, node and npm, as
 *     in the stack image.
 */

export type Shell = 'sh' | 'busybox';

/** The busybox binary, or null when the machine has none. */
export const BUSYBOX: string | null = ['/bin/busybox', '/usr/bin/busybox'].find((path) => existsSync(path)) ?? null;

/** The shells the buildpack tests run under: busybox's fails loudly under CI=true when busybox is missing. */
export function shellsToTest(): Shell[] {
  if (BUSYBOX !== null) return ['sh', 'busybox'];
  if (process.env.CI === 'true') throw new Error('busybox is missing (apt-get install busybox-static): the buildpacks must be tested under busybox sh');
  process.stdout.write('busybox is missing: the buildpacks are tested under the host\'s sh only\n');
  return ['sh'];
}

/** The real npm's CLI script (the host's npm). */
const NPM_CLI = join(execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim(), 'npm', 'bin', 'npm-cli.js');

let toolDirs: { root: string; recorder: string; busybox: string | null; npmCache: string } | null = null;

/** Directories made once per test file: the recording npm, and busybox's applets with node. */
function tools(): { root: string; recorder: string; busybox: string | null; npmCache: string } {
  if (toolDirs !== null) return toolDirs;
  const root = mkdtempSync(join(tmpdir(), 'svc-bp-tools-'));
  const recorder = join(root, 'recorder');
  mkdirSync(recorder);
  writeFileSync(join(recorder, 'npm'), `#!/bin/sh\necho "$*" >>"$NPM_CALLS"\nexec node '${NPM_CLI}' "$@"\n`, { mode: 0o755 });
  let busybox: string | null = null;
  if (BUSYBOX !== null) {
    busybox = join(root, 'busybox');
    mkdirSync(busybox);
    for (const applet of execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
      symlinkSync(BUSYBOX, join(busybox, applet));
    }
    symlinkSync(process.execPath, join(busybox, 'node'));
  }
  toolDirs = { root, recorder, busybox, npmCache: join(root, 'npm-cache') };
  return toolDirs;
}

/** How a step ended: its exit status and its output (stdout and stderr as they came). */
export interface StepResult {
  code: number | null;
  output: string;
}

/** Runs `buildpacks/<pack>/bin/<step> args…` under `shell`, `npmCalls` receiving the npm calls. */
export function runStep(shell: Shell, pack: string, step: string, args: string[], npmCalls: string, extraEnv: Record<string, string> = {}): Promise<StepResult> {
  const script = join(BUILTIN_BUILDPACKS_DIR, pack, 'bin', step);
  const { recorder, busybox } = tools();
  const path = shell === 'busybox' ? [recorder, busybox as string] : [recorder, dirname(process.execPath), process.env.PATH ?? '/usr/bin:/bin'];
  const env: NodeJS.ProcessEnv = { PATH: path.join(delimiter), NPM_CALLS: npmCalls, ...extraEnv };
  for (const name of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE']) {
    if (process.env[name] !== undefined) env[name] = process.env[name];
  }
  const [command, commandArgs] = shell === 'busybox' ? [BUSYBOX as string, ['sh', script, ...args]] : [script, args];
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/**
 * Runs `pack`'s compile under busybox with nothing but busybox's applets and node (the busybox
 * stack) and checks that it is refused for lack of `program`; says so when busybox is missing.
 */
export async function expectRefusedWithoutTool(pack: string, args: string[], program: string, language: string): Promise<void> {
  if (BUSYBOX === null) {
    if (process.env.CI === 'true') throw new Error('busybox is missing (apt-get install busybox-static)');
    process.stdout.write(`busybox is missing: the stack without ${language} is not tried\n`);
    return;
  }
  const bare = await runStep('busybox', pack, 'compile', args, join(args[1] ?? tmpdir(), 'npm-calls'));
  expect(bare.code).toBe(1);
  expect(bare.output).toContain(`${program} is not on PATH: this stack has no ${language}.`);
}

/** Runs `command` under sh as a process of the app would: the build's .profile.d sourced first. */
export function runAsProcess(build: string, command: string, path = '/usr/bin:/bin'): Promise<string> {
  return new Promise((resolve, reject) => {
    const script = `for f in ${build}/.profile.d/*.sh; do . "$f"; done\n${command}`;
    execFile('/bin/sh', ['-c', script], { cwd: build, env: { PATH: path } }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim())));
  });
}

/** The npm calls recorded in `file`, one argument string each; none when npm was not called. */
export async function npmCalls(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** A local package as a tarball in `directory` (npm pack, no network): `file:` dependencies point at it. */
export async function packLocalPackage(directory: string, name: string, source: string, extra: Record<string, unknown> = {}, files: Record<string, string> = {}): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), `svc-bp-pkg-${name}-`));
  await writeFile(join(work, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js', ...extra }));
  await writeFile(join(work, 'index.js'), source);
  for (const [file, content] of Object.entries(files)) await writeFile(join(work, file), content);
  await mkdir(directory, { recursive: true });
  execFileSync(process.execPath, [NPM_CLI, 'pack', '--pack-destination', directory, '--silent'], { cwd: work, env: isolatedNpmEnv() });
  await rm(work, { recursive: true, force: true });
  return join(directory, `${name}-1.0.0.tgz`);
}

/** Writes an app: package.json, files, and optionally its lockfile made by npm offline. */
export async function writeApp(directory: string, pkg: Record<string, unknown>, files: Record<string, string> = {}, lock = false): Promise<void> {
  await mkdir(directory, { recursive: true });
  await writeFile(join(directory, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', ...pkg }, null, 2)}\n`);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(directory, name)), { recursive: true });
    await writeFile(join(directory, name), content);
  }
  if (lock) {
    execFileSync(process.execPath, [NPM_CLI, 'install', '--package-lock-only', '--offline', '--ignore-scripts', '--silent'], {
      cwd: directory,
      env: isolatedNpmEnv(),
    });
  }
}

/** Writes config vars as ENV_DIR files. */
export async function writeEnvDir(directory: string, vars: Record<string, string>): Promise<void> {
  await mkdir(directory, { recursive: true });
  for (const [name, value] of Object.entries(vars)) await writeFile(join(directory, name), value);
}

/** The names in a directory, sorted; none when it does not exist. */
export async function list(directory: string): Promise<string[]> {
  return existsSync(directory) ? (await readdir(directory)).sort() : [];
}

/** Removes the directories the runs made (call in afterAll). */
export async function removeTools(): Promise<void> {
  if (toolDirs !== null) await rm(toolDirs.root, { recursive: true, force: true });
  toolDirs = null;
}

/** npm for preparing fixtures: the tests' own cache, no user configuration. */
function isolatedNpmEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: tools().root,
    npm_config_cache: tools().npmCache,
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
}
