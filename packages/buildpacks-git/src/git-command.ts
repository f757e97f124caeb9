import { spawn } from 'node:child_process';
import { FETCH_PROTOCOLS } from './fetch-rules';

/** How one git command ended. */
export interface GitResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why it was stopped before it ended by itself, if it was. */
  stopped: 'timeout' | 'size' | null;
}

/** How a git command is run. */
export interface GitCommandOptions {
  git: string;
  cwd: string;
  /** An empty directory for HOME, so no user's configuration or credentials are read. */
  home: string;
  /** Stopped (its whole process group) at this moment, epoch milliseconds. */
  deadline: number;
  /** Called about twice a second while it runs; answering false stops it for passing a size bound. */
  withinSize: () => Promise<boolean>;
}

const OUTPUT_LIMIT = 64 * 1024;

/**
 * The configuration every git command of a fetch runs with: only the transports of
 * `FETCH_PROTOCOLS`, no credential helper, no hooks, no submodules, no redirects to another
 * address than the one allowed, symbolic links checked out as plain files.
 */
export function safeGitConfig(): string[] {
  const settings = [
    'protocol.allow=never',
    ...FETCH_PROTOCOLS.map((protocol) => `protocol.${protocol}.allow=always`),
    'credential.helper=',
    'core.hooksPath=/dev/null',
    'core.fsmonitor=false',
    'core.symlinks=false',
    'submodule.recurse=false',
    'fetch.recurseSubmodules=false',
    'http.followRedirects=false',
    'advice.detachedHead=false',
    'init.defaultBranch=main',
  ];
  return settings.flatMap((setting) => ['-c', setting]);
}

/** The environment of a git command: nothing of the controller's but PATH and the CA settings. */
export function safeGitEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_PROTOCOL_FROM_USER: '0',
    LC_ALL: 'C',
  };
  for (const name of ['GIT_SSL_CAINFO', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Runs `git <safe config> <args>` and resolves when it ends or was stopped; never rejects for git's own failure. */
export function runGit(args: string[], options: GitCommandOptions): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.git, [...safeGitConfig(), ...args], {
      cwd: options.cwd,
      env: safeGitEnvironment(options.home),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let stopped: GitResult['stopped'] = null;
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < OUTPUT_LIMIT) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < OUTPUT_LIMIT) stderr += chunk.toString('utf8');
    });
    const stop = (reason: 'timeout' | 'size'): void => {
      if (stopped !== null || child.exitCode !== null || child.pid === undefined) return;
      stopped = reason;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => stop('timeout'), Math.max(0, options.deadline - Date.now()));
    let checking = false;
    const sizeCheck = setInterval(() => {
      if (checking) return;
      checking = true;
      options
        .withinSize()
        .then((within) => {
          if (!within) stop('size');
        })
        .catch(() => undefined)
        .finally(() => {
          checking = false;
        });
    }, 500);
    child.on('error', (error) => {
      clearTimeout(timer);
      clearInterval(sizeCheck);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      clearInterval(sizeCheck);
      resolve({ code, stdout, stderr, stopped });
    });
  });
}
