import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Resident memory of a process, in MiB: now, and the highest since it started. */
export interface MemorySample {
  rssMiB: number;
  peakMiB: number;
}

/** A server the benchmark started as a child process, listening on 127.0.0.1. */
export interface ServerProcess {
  name: string;
  /** Where it listens now (a restart moves it to another port). */
  readonly url: string;
  readonly pid: number;
  memory(): MemorySample;
  /** CPU time the process has used so far (user and system), in seconds. */
  cpuSeconds(): number;
  /** The highest resident memory seen by the sampler since the last call to resetSampledPeak. */
  sampledPeakMiB(): number;
  resetSampledPeak(): void;
  /** The highest resident memory of any of its processes so far (VmHWM), in MiB. */
  peakMiB(): number;
  /** Whether it has exited, and the last lines it wrote: what to show when it failed. */
  postMortem(): string;
  /**
   * True when the process is gone because it was told to stop (exit code 0 after SIGTERM or
   * SIGINT, or killed by a signal) rather than because it failed (any other exit code).
   */
  stoppedFromOutside(): boolean;
  /** Starts it again on the same data, after it stopped from outside. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function readStatus(pid: number): MemorySample {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return { rssMiB: Number.NaN, peakMiB: Number.NaN };
  }
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) / 1024 : Number.NaN;
  };
  return { rssMiB: field('VmRSS'), peakMiB: field('VmHWM') };
}

/** utime + stime of a process from /proc/<pid>/stat, in seconds (clock ticks of 1/100 s). */
function readCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntilHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}:\n${output()}`);
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`server at ${url} did not become healthy within 60 s:\n${output()}`);
}

interface Incarnation {
  child: ChildProcess;
  pid: number;
  url: string;
  exited: Promise<void>;
  output: () => string;
}

async function spawnServer(script: string, env: Record<string, string>, nodeArgs: readonly string[]): Promise<Incarnation> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const incarnation = { child, pid: child.pid ?? -1, url: `http://127.0.0.1:${port}`, exited, output: () => output };
  try {
    await waitUntilHealthy(incarnation.url, child, incarnation.output);
  } catch (error) {
    await stopChild(incarnation);
    throw error;
  }
  return incarnation;
}

async function stopChild({ child, exited }: Incarnation): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const stopped = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
  if (!stopped) {
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * Starts `node <script>` with `env` on a free port (passed as PORT), waits until
 * `/healthz` answers, and samples its resident memory every 100 ms.
 */
export async function startServer(
  name: string,
  script: string,
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
): Promise<ServerProcess> {
  let current = await spawnServer(script, env, nodeArgs);
  let sampledPeak = 0;
  let earlierPeak = 0;
  const sampler = setInterval(() => {
    const { rssMiB } = readStatus(current.pid);
    if (rssMiB > sampledPeak) sampledPeak = rssMiB;
  }, 100);
  sampler.unref();
  const status = (): string => {
    const { child } = current;
    return child.exitCode !== null || child.signalCode !== null ? `exited (${child.exitCode ?? child.signalCode})` : 'still running';
  };

  return {
    name,
    get url() {
      return current.url;
    },
    get pid() {
      return current.pid;
    },
    memory: () => readStatus(current.pid),
    cpuSeconds: () => readCpuSeconds(current.pid),
    sampledPeakMiB: () => Math.max(sampledPeak, readStatus(current.pid).rssMiB),
    resetSampledPeak: () => {
      sampledPeak = readStatus(current.pid).rssMiB;
    },
    peakMiB: () => Math.max(earlierPeak, readStatus(current.pid).peakMiB || 0),
    postMortem: () => `${status()}; last output:\n${current.output().slice(-4000)}`,
    stoppedFromOutside: () => current.child.signalCode !== null || current.child.exitCode === 0,
    async restart() {
      earlierPeak = Math.max(earlierPeak, readStatus(current.pid).peakMiB || 0);
      await stopChild(current);
      current = await spawnServer(script, env, nodeArgs);
    },
    async stop() {
      clearInterval(sampler);
      await stopChild(current);
    },
  };
}
