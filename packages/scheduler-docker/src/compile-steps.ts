import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { followLines, outputOf } from './engine';
import { DEFAULT_LOG_LIMIT, logConfigOf } from './options';

/** The user (uid:gid) a build's steps run as: the app's. */
export const STEP_USER = '10000:10000';

/** How one step runs in the build's container. */
export interface StepRun {
  /** The command and its arguments (no shell). */
  cmd: string[];
  /** `uid:gid`; default {@link STEP_USER}. */
  user?: string;
  /** Environment added to the container's. */
  env?: string[];
  /** The most time the step may take; past it the build's container is killed. */
  timeoutMs: number;
  /** Gets each line of its output (stdout and stderr) as it comes. */
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
}

/** How a step ended. */
export interface StepResult {
  /** Its exit code; null when it was killed before the engine knew one. */
  exitCode: number | null;
  /** Whether its time limit killed the build's container. */
  timedOut: boolean;
}

/**
 * Runs a command in a running container as `exec` and follows its output by lines. When the
 * time limit passes, the whole container is killed (an exec cannot be stopped on its own,
 * and whatever it started goes with it): the build is over.
 */
export async function runStep(container: Docker.Container, step: StepRun): Promise<StepResult> {
  const exec = await container.exec({
    Cmd: step.cmd,
    User: step.user ?? STEP_USER,
    Env: step.env ?? [],
    WorkingDir: '/app',
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Readable;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void container.kill().catch(() => undefined);
    stream.destroy();
  }, step.timeoutMs);
  try {
    await followLines(stream, (which, line) => step.onLine?.(which, line));
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) return { exitCode: null, timedOut };
  // The stream ends as the process exits; the engine may take a moment to record its code.
  for (let tries = 0; tries < 50; tries++) {
    const info = await exec.inspect().catch(() => null);
    if (info === null) return { exitCode: null, timedOut };
    if (!info.Running) return { exitCode: info.ExitCode ?? null, timedOut };
    await new Promise((done) => setTimeout(done, 100));
  }
  return { exitCode: null, timedOut };
}

/** Runs a short command of the platform's in the container and resolves with its stdout (at most 64 KiB). */
export async function runQuiet(container: Docker.Container, cmd: string[], user: string, timeoutMs = 30_000): Promise<{ exitCode: number | null; stdout: string }> {
  let stdout = '';
  const result = await runStep(container, {
    cmd,
    user,
    timeoutMs,
    onLine: (which, line) => {
      if (which === 'stdout' && stdout.length < 65_536) stdout += `${line}\n`;
    },
  });
  return { exitCode: result.exitCode, stdout };
}

/**
 * Ends every process of the app's user left in the container by a step (a daemon started in
 * the background, a process still writing the cache): the next step, the cache's measure and
 * the commit see nothing of them. The container's own idle process is another user's.
 */
export async function killLeftovers(container: Docker.Container): Promise<void> {
  // kill(-1) signals every process the caller may signal but itself; twice, for one forked in between.
  await runQuiet(container, ['/bin/sh', '-c', 'kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; true'], STEP_USER);
}

/** How many processes the kernel killed in the container for its memory limit (cgroup v2 `memory.events` or v1 `memory.oom_control`). */
export async function oomKills(container: Docker.Container): Promise<number> {
  const { stdout } = await runQuiet(container, ['/bin/sh', '-c', 'cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null; true'], STEP_USER);
  return Number(/^oom_kill (\d+)$/m.exec(stdout)?.[1] ?? 0);
}

/** A throwaway container that works on an app's build cache volume from outside the build. */
export interface CacheTask {
  /** The image it runs (the stack's: a shell with `du`, `chown`, `rm`). */
  image: string;
  /** The volume, mounted at /cache. */
  volume: string;
  /** A shell script. */
  script: string;
  /** The only capabilities it has (e.g. `DAC_READ_SEARCH` to measure, `CHOWN` to hand it over). */
  capabilities: string[];
  /** Labels of the container. */
  labels: Record<string, string>;
}

/**
 * Runs a script as root with only the given capabilities, no network and small limits, the
 * cache volume mounted, and resolves with its exit code and output. Nothing of the build's
 * container (its processes, its files) takes part: what it measures is the volume as it is.
 * @throws Error when the engine cannot run it.
 */
export async function runCacheTask(docker: Docker, task: CacheTask, timeoutMs = 60_000): Promise<{ exitCode: number; output: string }> {
  const container = await docker.createContainer({
    Image: task.image,
    Entrypoint: ['/bin/sh', '-c'],
    Cmd: [task.script],
    User: '0:0',
    WorkingDir: '/',
    Labels: task.labels,
    Tty: false,
    HostConfig: {
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      CapAdd: task.capabilities,
      SecurityOpt: ['no-new-privileges'],
      PidsLimit: 32,
      LogConfig: logConfigOf(DEFAULT_LOG_LIMIT) as Docker.HostConfig['LogConfig'],
      Memory: 128 * 1024 * 1024,
      MemorySwap: 128 * 1024 * 1024,
      Mounts: [{ Type: 'volume', Source: task.volume, Target: '/cache' }],
    },
  });
  try {
    const waited = container.wait({ condition: 'next-exit' }) as Promise<{ StatusCode?: number }>;
    await container.start();
    let timer: NodeJS.Timeout | undefined;
    const status = await Promise.race([
      waited,
      new Promise<{ StatusCode?: number }>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the build cache task did not end within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    return { exitCode: status.StatusCode ?? 1, output: await outputOf(container) };
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
