import { spawn } from 'node:child_process';

/** Variables of the environment a git process gets; nothing else of the controller's leaks into it. */
export type GitEnvironment = Record<string, string>;

/** A git command that exited with a non-zero status or could not start. */
export class GitCommandFailed extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args[0] ?? ''} failed${exitCode === null ? '' : ` with status ${exitCode}`}${stderr ? `: ${stderr.trim().split('\n')[0]}` : ''}`);
    this.name = 'GitCommandFailed';
  }
}

/** The environment every git process starts from: the PATH to find git, no user or system configuration. */
export function baseGitEnvironment(home: string): GitEnvironment {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    // An empty home and no system file: no configuration of the machine's users changes what git does here.
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
  };
}

/** How to run one git command. */
export interface GitOptions {
  env: GitEnvironment;
  cwd?: string;
  /** The most bytes of standard output kept; more fails the command. Default 16 MiB. */
  maxOutputBytes?: number;
}

const MAX_STDERR = 64 * 1024;

/**
 * Runs `git <args>` to completion and resolves with its standard output.
 * @throws GitCommandFailed when it cannot start, exits non-zero or writes more than allowed.
 */
export function runGit(args: string[], options: GitOptions): Promise<Buffer> {
  const limit = options.maxOutputBytes ?? 16 * 1024 * 1024;
  return new Promise<Buffer>((resolve, reject) => {
    const child = spawn('git', args, { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let overflow = false;
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > limit) {
        overflow = true;
        child.kill('SIGKILL');
        return;
      }
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < MAX_STDERR) err += chunk.toString('utf8');
    });
    child.once('error', (error) => reject(new GitCommandFailed(args, null, error.message)));
    child.once('close', (code) => {
      if (overflow) reject(new GitCommandFailed(args, code, `more than ${limit} bytes of output`));
      else if (code === 0) resolve(Buffer.concat(out));
      else reject(new GitCommandFailed(args, code, err));
    });
  });
}
