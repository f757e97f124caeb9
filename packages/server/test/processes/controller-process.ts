import { spawn, type ChildProcess } from 'node:child_process';
import { watchStart } from './log-lines';
import type { WorkspaceBuild } from './workspace-build';
import { TEST_PASSWORD_HASHING } from '../support/server';

/** A controller running as a child process, as `npm start` runs it. */
export interface ControllerProcess {
  /** e.g. `http://127.0.0.1:41234` */
  readonly url: string;
  readonly pid: number;
  /** Sends `signal` (default SIGKILL) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops it as an operator would (SIGTERM), falling back to SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** The last lines the process wrote, for failure messages. */
  output(): string;
}

/** Options of one controller process. */
export interface ControllerOptions {
  /** Variables on top of a minimal environment (PATH, HOME, SCHEDULER=memory); HOST and LOG_LEVEL are set here, PORT unless given. */
  env: Record<string, string>;
  /** How long to wait for it to listen. Default 30 s. */
  startTimeoutMs?: number;
}

/**
 * Starts `node <main>` from the transpiled workspace on a free port and resolves once it
 * logs that it listens. Rejects (with its output) when it exits or does not listen in time.
 */
export function startController(build: WorkspaceBuild, options: ControllerOptions): Promise<ControllerProcess> {
  const child: ChildProcess = spawn(process.execPath, ['-r', build.resolver, build.main], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      NODE_PATH: build.nodePath,
      // These controllers test the API and the database: no app process is started unless a test asks for it.
      SCHEDULER: 'memory',
      // Several controllers run at once: none of them competes for the fixed git SSH port.
      GIT_SSH_PORT: 'off',
      // Nor for the router's port.
      ROUTER_PORT: '0',
      ...TEST_PASSWORD_HASHING,
      ...options.env,
      // The start-up line at level info tells which port it listens on.
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      // A port of its own unless the test fixes one (a controller started again on the same port).
      PORT: options.env.PORT ?? '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started = watchStart(child, 'controller', options.startTimeoutMs ?? 30_000, (record) =>
    typeof record.url === 'string' && typeof record.msg === 'string' && record.msg.startsWith('controller listening') ? record.url : null,
  );
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return started.ready.then((url) => ({
    url,
    pid: child.pid as number,
    kill,
    stop: async (graceMs = 10_000) => {
      const fallback = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await kill('SIGTERM');
      clearTimeout(fallback);
    },
    output: started.output,
  }));
}
