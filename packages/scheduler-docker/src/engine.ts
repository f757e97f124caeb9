import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import { LineSplitter, memoryLimitBytes, type ContainerSpec } from '@svc/core';

// What the engine schedulers share with the process scheduler is the core's and the supervisor
// kit's; the Swarm scheduler and the compile steps import it from here.
export { CappedOutput, FAILURE_OUTPUT_LINES as LAST_OUTPUT_LINES, LineSplitter, MAX_LINE_LENGTH, OutputTail, formatSeconds, lastOutputNote, shownOutputLine } from '@svc/core';
export { sleep } from '@svc/supervisor-node';

/** The engine's default address when DOCKER_HOST is unset. */
export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

/** The labels every engine object of the platform carries. */
export const LABELS = {
  /** The app id. */
  app: 'svc.app',
  /** The process type (`web`, `worker`, `cmd`; `run` for one-off commands). */
  type: 'svc.type',
  /** The container number within its type. */
  num: 'svc.num',
  /** The release version. */
  release: 'svc.release',
  /** The platform's container uuid. */
  container: 'svc.container',
  /** The controller instance that owns the object: two controllers on one engine leave each other's alone. */
  instance: 'svc.instance',
  /**
   * The installation that owns the object (a fingerprint of its SECRET_KEY): two installations
   * given the same instance by mistake are told apart, and the second one's start is refused.
   */
  installation: 'svc.installation',
  /** A digest of everything the container was created from, to adopt only an identical container. */
  spec: 'svc.spec',
} as const;

/**
 * The dockerode connection options for a DOCKER_HOST value: `unix:///path/docker.sock`
 * (default `unix:///var/run/docker.sock`), `tcp://host:port` or `http://host:port`
 * (plain), `https://host:port` (TLS, certificates as the engine's client expects them are
 * not read here: use a unix socket or a TLS-terminating proxy).
 * @throws Error when the value is not one of these.
 */
export function dockerHostOptions(value: string | undefined | null): Docker.DockerOptions {
  const host = value?.trim() || DEFAULT_DOCKER_HOST;
  if (host.startsWith('unix://')) {
    const socketPath = host.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw new Error(`DOCKER_HOST "${host}" must name an absolute socket path, e.g. unix:///var/run/docker.sock`);
    return { socketPath };
  }
  const match = /^(tcp|http|https):\/\/([^/:]+|\[[0-9a-fA-F:]+\]):([0-9]{1,5})\/?$/.exec(host);
  if (!match) throw new Error(`DOCKER_HOST "${host}" must be unix:///path/to/docker.sock or tcp://host:port`);
  const [, scheme, name, port] = match;
  return { protocol: scheme === 'https' ? 'https' : 'http', host: (name ?? '').replace(/^\[|\]$/g, ''), port: Number(port) };
}

/** A dockerode client for the engine at DOCKER_HOST (see {@link dockerHostOptions}). */
export function createEngine(dockerHost?: string | null): Docker {
  return new Docker(dockerHostOptions(dockerHost));
}

/**
 * Whether an engine answers at the client's address within `timeoutMs`: null when it does,
 * else the reason it does not (for the operator's log).
 */
export async function pingEngine(docker: Docker, timeoutMs = 2000): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return null;
  } catch (error) {
    return engineReason(error);
  } finally {
    clearTimeout(timer);
  }
}

/** The HTTP status of an engine error, if it has one. */
export function engineStatus(error: unknown): number | null {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : null;
}

/** The engine's own message for a failure (the `message` of its JSON answer), else the error's. */
export function engineReason(error: unknown): string {
  const json = (error as { json?: unknown } | null)?.json;
  if (json && typeof json === 'object' && typeof (json as { message?: unknown }).message === 'string') {
    return (json as { message: string }).message.trim();
  }
  if (typeof json === 'string' && json.trim() !== '') return json.trim();
  const reason = (error as { reason?: unknown } | null)?.reason;
  const message = error instanceof Error && error.message ? error.message : String(error);
  return typeof reason === 'string' && !message ? reason : message.replace(/^\(HTTP code \d+\) [a-z ]+ - /, '').trim();
}

/**
 * The engine's network of that name, created from `create` when the engine has none (one
 * another controller creates meanwhile is taken as it is).
 * @throws Error when the engine refuses to inspect or create it.
 */
export async function ensureNetwork(docker: Docker, create: Docker.NetworkCreateOptions): Promise<Docker.NetworkInspectInfo> {
  try {
    return (await docker.getNetwork(create.Name).inspect()) as Docker.NetworkInspectInfo;
  } catch (error) {
    if (engineStatus(error) !== 404) throw error;
  }
  try {
    await docker.createNetwork(create);
  } catch (error) {
    // Another controller created it meanwhile.
    if (engineStatus(error) !== 409) throw error;
  }
  return (await docker.getNetwork(create.Name).inspect()) as Docker.NetworkInspectInfo;
}

/** Which stream a frame of a container's output came from. */
export type OutputStream = 'stdout' | 'stderr';

/**
 * Splits the engine's multiplexed output of a container without a TTY (attach and logs):
 * frames of an 8-byte header (stream type, three zero bytes, big-endian payload length)
 * and the payload, across chunk boundaries.
 */
export class FrameDemultiplexer {
  private buffer: Buffer = Buffer.alloc(0);

  constructor(
    private readonly onFrame: (stream: OutputStream, payload: Buffer) => void,
    private readonly onEngineError: (message: string) => void = () => undefined,
  ) {}

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    while (this.buffer.length >= 8) {
      const length = this.buffer.readUInt32BE(4);
      if (this.buffer.length < 8 + length) return;
      const type = this.buffer[0];
      const payload = this.buffer.subarray(8, 8 + length);
      this.buffer = this.buffer.subarray(8 + length);
      // 0 is stdin (never written by the engine here), 1 stdout, 2 stderr, 3 the engine's own
      // error in the stream (e.g. a node whose logs could not be read), never the app's output.
      if (type === 3) this.onEngineError(payload.toString('utf8').trim());
      else this.onFrame(type === 2 ? 'stderr' : 'stdout', payload);
    }
  }
}

/** CPU shares that stand for one whole CPU. */
export const SHARES_PER_CPU = 1024;
/** The smallest CPU limit the engine accepts: 0.01 CPU. */
const MIN_NANO_CPUS = 10_000_000;

/**
 * The engine's CPU limit (NanoCpus, billionths of a CPU) for an app's `cpu` value, read as
 * CPU shares where 1024 is one whole CPU: 512 is half a CPU, 2048 two CPUs. Null for no
 * value or 0 (no limit). At least 0.01 CPU.
 */
export function nanoCpusForShares(shares: number | null): number | null {
  if (shares === null || !Number.isFinite(shares) || shares <= 0) return null;
  return Math.max(MIN_NANO_CPUS, Math.round((shares / SHARES_PER_CPU) * 1e9));
}

/** The limits of one container: the app's memory and cpu, or the scheduler's defaults when it sets none. */
export interface ContainerLimits {
  /** Hard memory limit in bytes; null for none. */
  memoryBytes: number | null;
  /** CPU cap in billionths of a CPU; null for none. */
  nanoCpus: number | null;
  /** The CPU shares the cap was made from (1024 = one CPU); null for none. */
  cpuShares: number | null;
}

/**
 * The limits of a container whose app sets `memory` and `cpu` (null: none set), falling back
 * to the scheduler's defaults (null: no limit).
 * @throws ValidationFailed (from the core) when a memory value is not a size.
 */
export function containerLimits(memory: string | null, cpu: number | null, defaults: { memory: string | null; cpu: number | null }): ContainerLimits {
  const shares = cpu === null || cpu === 0 ? defaults.cpu : cpu;
  return { memoryBytes: memoryLimitBytes(memory ?? defaults.memory), nanoCpus: nanoCpusForShares(shares), cpuShares: shares };
}

/** A container's environment in the engine's `KEY=value` form, with the PORT it listens on. */
export function environmentList(env: Record<string, string>, port: number): string[] {
  return Object.entries({ ...env, PORT: String(port) }).map(([key, value]) => `${key}=${value}`);
}

/** The environment's entries in key order, so that a digest does not depend on the order they were set in. */
export function sortedEntries(env: Record<string, string>): Array<[string, string]> {
  return Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** What a container runs, in the order every digest lists it: image, command, environment, memory and CPU. */
export function runParts(spec: Pick<ContainerSpec, 'image' | 'command' | 'env' | 'memory' | 'cpu'>): unknown[] {
  return [spec.image, spec.command, sortedEntries(spec.env), spec.memory, spec.cpu];
}

/** A digest of everything an engine object is made from: only an identical one is adopted. */
export function digestOf(parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** Waits for `promise` at most `ms` (its outcome is ignored), leaving no timer behind. */
export async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => undefined), new Promise<void>((done) => (timer = setTimeout(done, ms)))]);
  clearTimeout(timer);
}

/**
 * Follows the engine's multiplexed output stream (container or service logs, attach): calls
 * `onFrame` with each frame's payload as it comes, and `onEngineError` with the engine's own
 * errors in it. Resolves when the stream ends, closes or fails.
 */
export function followFrames(
  stream: Readable,
  onFrame: (which: OutputStream, payload: Buffer) => void,
  onEngineError?: (message: string) => void,
): Promise<void> {
  const demux = new FrameDemultiplexer(onFrame, onEngineError);
  stream.on('data', (chunk: Buffer) => demux.push(chunk));
  return new Promise<void>((done) => {
    stream.once('end', done);
    stream.once('close', done);
    stream.once('error', () => done());
  });
}

/**
 * Like {@link followFrames}, by lines: `onLine` gets each line of stdout and stderr, and the
 * last unterminated ones at the end.
 */
export async function followLines(stream: Readable, onLine: (which: OutputStream, line: string) => void, onEngineError?: (message: string) => void): Promise<void> {
  const lines: Record<OutputStream, LineSplitter> = { stdout: new LineSplitter(), stderr: new LineSplitter() };
  await followFrames(
    stream,
    (which, payload) => {
      for (const line of lines[which].push(payload)) onLine(which, line);
    },
    onEngineError,
  );
  for (const line of lines.stdout.end()) onLine('stdout', line);
  for (const line of lines.stderr.end()) onLine('stderr', line);
}

/** Everything an ended container wrote (stdout and stderr), as lines joined by newlines; read for at most 5 s. */
export async function outputOf(container: Docker.Container): Promise<string> {
  const logs = (await container.logs({ follow: true, stdout: true, stderr: true })) as unknown as Readable;
  const splitter = new LineSplitter();
  const lines: string[] = [];
  await waitAtMost(
    followFrames(logs, (_which, payload) => lines.push(...splitter.push(payload))),
    5000,
  );
  lines.push(...splitter.end());
  return lines.join('\n');
}
