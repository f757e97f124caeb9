import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { generateEd25519Pair } from '../../src';

/** An SSH key pair on disk, as a developer has one. */
export interface KeyPair {
  /** The private key file (OpenSSH format, mode 0600). */
  path: string;
  /** The public key line, as registered with POST /v1/keys/. */
  publicKey: string;
}

/** Generates an ed25519 key pair and writes the private key where `ssh -i` can use it. */
export async function keyPair(dir: string, name: string): Promise<KeyPair> {
  const pair = generateEd25519Pair(`${name}@example.com`);
  const path = join(dir, `${name}_ed25519`);
  await writeFile(path, pair.private, { mode: 0o600 });
  return { path, publicKey: pair.public };
}

/** What a finished command left. */
export interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion (with a time limit), never rejecting on a non-zero exit. */
export function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Outcome> {
  return new Promise<Outcome>((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The ssh options of a developer's machine that knows nothing of this server yet; git takes the port from the remote's URL. */
export function sshArgs(key: KeyPair, port?: number): string[] {
  return [
    '-F', '/dev/null',
    '-i', key.path,
    ...(port === undefined ? [] : ['-p', String(port)]),
    '-o', 'StrictHostKeyChecking=no',
    '-o', 'UserKnownHostsFile=/dev/null',
    '-o', 'IdentitiesOnly=yes',
    '-o', 'IdentityAgent=none',
    '-o', 'BatchMode=yes',
    '-o', 'LogLevel=ERROR',
  ];
}

/**
 * A developer's working copy: git with its own empty home and configuration, talking to the
 * server over ssh with one key.
 */
export class WorkingCopy {
  constructor(
    readonly dir: string,
    private readonly home: string,
    private key: KeyPair,
  ) {}

  /** Creates the working copy with `git init` (branch `branch`, default main). */
  static async init(dir: string, home: string, key: KeyPair, branch = 'main'): Promise<WorkingCopy> {
    await mkdir(dir, { recursive: true });
    await mkdir(home, { recursive: true });
    const copy = new WorkingCopy(dir, home, key);
    await copy.expectGit(['init', '--quiet', `--initial-branch=${branch}`]);
    return copy;
  }

  /** Uses another key from now on. */
  useKey(key: KeyPair): void {
    this.key = key;
  }

  /** The environment git runs with: no system or user configuration, ssh with this copy's key. */
  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: this.home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'Dev',
      GIT_AUTHOR_EMAIL: 'dev@example.com',
      GIT_COMMITTER_NAME: 'Dev',
      GIT_COMMITTER_EMAIL: 'dev@example.com',
      GIT_SSH_COMMAND: ['ssh', ...sshArgs(this.key)].join(' '),
      GIT_TERMINAL_PROMPT: '0',
      LC_ALL: 'C',
      ...extra,
    };
  }

  /** Runs git in the working copy. */
  git(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Outcome> {
    return run('git', args, { cwd: this.dir, env: this.env(extra) });
  }

  /** Runs git and fails the test with its output unless it exits 0. */
  async expectGit(args: string[]): Promise<string> {
    const outcome = await this.git(args);
    if (outcome.code !== 0) throw new Error(`git ${args.join(' ')} exited ${outcome.code}:\n${outcome.stderr}`);
    return outcome.stdout;
  }

  /** Writes files (path → content), commits them all, and resolves with the new commit's sha. */
  async commit(files: Record<string, string | Buffer>, message = 'change'): Promise<string> {
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(this.dir, path)), { recursive: true });
      await writeFile(join(this.dir, path), content);
    }
    await this.expectGit(['add', '--all']);
    await this.expectGit(['commit', '--quiet', '--allow-empty', '-m', message]);
    return (await this.expectGit(['rev-parse', 'HEAD'])).trim();
  }

  /** Removes a file and commits. */
  async remove(path: string): Promise<string> {
    await this.expectGit(['rm', '--quiet', path]);
    await this.expectGit(['commit', '--quiet', '-m', `remove ${path}`]);
    return (await this.expectGit(['rev-parse', 'HEAD'])).trim();
  }
}

/** A small Node.js web app: answers every request with `message`, on $PORT. */
export function nodeApp(message: string): Record<string, string> {
  return {
    Procfile: 'web: node server.js\n',
    'server.js': [
      "const http = require('node:http');",
      `http.createServer((req, res) => res.end(${JSON.stringify(message)} + '\\n')).listen(Number(process.env.PORT), () => process.stdout.write('listening on ' + process.env.PORT + '\\n'));`,
      '',
    ].join('\n'),
    'package.json': '{ "name": "hello", "version": "1.0.0", "private": true }\n',
  };
}
