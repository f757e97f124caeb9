import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { watchStart } from './log-lines';
import type { WorkspaceBuild } from './workspace-build';

/** A router running as a process of its own (`npm run start:router`), from the transpiled workspace. */
export interface RouterProcess {
  /** The plain HTTP port it listens on. */
  readonly port: number;
  readonly pid: number;
  /** Stops it (SIGTERM, SIGKILL after `graceMs`) and resolves once it has exited; its workers go with it. */
  stop(graceMs?: number): Promise<void>;
  /** The last lines it wrote, for failure messages. */
  output(): string;
}

// Every router a test file starts: none may outlive the test run, whatever ends it.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `node <router-main>` with `env` on top of a minimal environment (ROUTER_PORT 0 by
 * default) and resolves once it logs that it listens. Rejects (with its output) when it
 * exits or does not listen in time. Stop it with `stop()`.
 */
export function startRouter(build: WorkspaceBuild, env: Record<string, string>, startTimeoutMs = 30_000): Promise<RouterProcess> {
  const child = spawn(process.execPath, ['-r', build.resolver, join(build.root, 'packages', 'server', 'src', 'router-main.js')], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_PATH: build.nodePath, ROUTER_PORT: '0', ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const started = watchStart(child, 'router', startTimeoutMs, (record) =>
    typeof record.msg === 'string' && record.msg.startsWith('router listening') && typeof record.port === 'number' ? record.port : null,
  );
  return started.ready.then((port) => ({
    port,
    pid: child.pid as number,
    stop: async (graceMs = 15_000) => {
      const fallback = setTimeout(() => child.kill('SIGKILL'), graceMs);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      clearTimeout(fallback);
    },
    output: started.output,
  }));
}
