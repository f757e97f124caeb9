/*
 * The networks' guards installed through the engine, for a controller that cannot run
 * iptables itself (no binary in its image, no privilege: uid 1000 in a container holding the
 * engine's socket). One short-lived helper container per guard runs the whole script in the
 * host's network and user namespaces, as root with NET_ADMIN, and calls the engine machine's
 * own iptables through `chroot` into the host's root file system, so that the rules go to the
 * backend (legacy or nft) dockerd itself uses. Whoever may use the engine's API is root on
 * its machine already; this asks nothing more (ADR 0030).
 */
import type Docker from 'dockerode';
import { FrameDemultiplexer, engineReason } from './engine';
import { LocalIptables, iptablesScript, localIptablesWorks, outcomesOf, type GuardRunnerChoice, type IptablesOutcome, type IptablesRunner, type IptablesStep } from './iptables-runner';

/** Where the helper container sees the engine machine's root file system. */
export const HOST_ROOT = '/host';

/** The label of the helper containers (a stopped controller's leftovers are recognisable). */
export const GUARD_HELPER_LABEL = 'svc.network-guard';

/** How long a helper may take to run its script. */
const HELPER_TIMEOUT_MS = 60_000;

/**
 * The helper container's configuration for a script: the stack image's `sh` runs it as root
 * in the host's network namespace (the rules are the host's) and user namespace (root is the
 * host's root, even on an engine remapping users), with only the capabilities iptables and
 * `chroot` need. The host's root is mounted read-only; its `/run` writable, where iptables
 * takes its lock (`-w`) beside dockerd's own iptables calls.
 */
export function helperContainerSpec(image: string, script: string): Docker.ContainerCreateOptions {
  return {
    Image: image,
    Entrypoint: ['/bin/sh', '-c'],
    Cmd: [script],
    User: '0:0',
    Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    Labels: { [GUARD_HELPER_LABEL]: 'true' },
    Tty: false,
    HostConfig: {
      NetworkMode: 'host',
      UsernsMode: 'host',
      CapDrop: ['ALL'],
      CapAdd: ['NET_ADMIN', 'NET_RAW', 'SYS_CHROOT'],
      SecurityOpt: ['no-new-privileges'],
      Binds: [`/:${HOST_ROOT}:ro`, `/run:${HOST_ROOT}/run`],
      RestartPolicy: { Name: 'no' },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '1' } },
    },
  };
}

/** Runs guards' steps in one helper container of `image` per run, with the engine machine's iptables. */
export class EngineIptables implements IptablesRunner {
  readonly where: string;

  /** `ensureImage` makes sure the image is on the engine before a helper starts (e.g. makes the stack image). */
  constructor(
    private readonly docker: Docker,
    private readonly image: string,
    private readonly ensureImage: () => Promise<void> = async () => undefined,
  ) {
    this.where = `through a helper container of ${image} on the engine`;
  }

  async run(steps: readonly IptablesStep[]): Promise<IptablesOutcome[]> {
    await this.ensureImage();
    const script = iptablesScript(steps, ['chroot', HOST_ROOT, 'iptables', '-w']);
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(helperContainerSpec(this.image, script));
    } catch (error) {
      throw new Error(`the iptables helper container (image ${this.image}) could not be made: ${engineReason(error)}`);
    }
    try {
      const { code, stdout, stderr } = await this.finish(container).catch((error: unknown) => {
        throw new Error(`the iptables helper container failed: ${engineReason(error)}`);
      });
      // 1 is the script's own exit at a failed step; anything else is sh or chroot failing.
      if (code !== 0 && code !== 1) throw new Error(`the iptables helper container exited ${code}: ${(stderr || stdout).trim().slice(-500)}`);
      return outcomesOf(stdout);
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
  }

  /** Starts the helper, waits for it (killing it past the time limit) and reads its output. */
  private async finish(container: Docker.Container): Promise<{ code: number; stdout: string; stderr: string }> {
    await container.start();
    const timer = setTimeout(() => void container.kill().catch(() => undefined), HELPER_TIMEOUT_MS);
    const { StatusCode } = (await container.wait().finally(() => clearTimeout(timer))) as { StatusCode: number };
    const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const raw = (await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    new FrameDemultiplexer((which, payload) => chunks[which].push(Buffer.from(payload))).push(raw);
    return { code: StatusCode, stdout: Buffer.concat(chunks.stdout).toString('utf8'), stderr: Buffer.concat(chunks.stderr).toString('utf8') };
  }
}

/** What the guards' runner is made from. */
export interface GuardRunnerOptions {
  docker: Docker;
  /** `auto` (default), `local` or `engine` (`DOCKER_GUARDS`). */
  choice?: GuardRunnerChoice;
  /** The helper container's image (the stack image: it has `sh` and `chroot`). */
  image: string;
  /** Makes sure the image is on the engine before a helper starts. */
  ensureImage?: () => Promise<void>;
  /** The command of this machine's iptables; default `iptables -w` (the one on PATH). */
  localCommand?: readonly string[];
}

/**
 * The runner of the guards: this machine's iptables with `local`; a helper container on the
 * engine with `engine`; with `auto`, decided at the first run: this machine's iptables when
 * the engine is on a local socket (it runs on this machine) and iptables works here (it is
 * on PATH and we are root), else the engine.
 */
export function guardRunner(options: GuardRunnerOptions): IptablesRunner {
  const engine = new EngineIptables(options.docker, options.image, options.ensureImage);
  const choice = options.choice ?? 'auto';
  if (choice === 'engine') return engine;
  const local = new LocalIptables(options.localCommand);
  if (choice === 'local') return local;
  const onSocket = typeof (options.docker.modem as { socketPath?: unknown }).socketPath === 'string';
  return new AutoIptables(async () => (onSocket && (await localIptablesWorks(options.localCommand)) ? local : engine));
}

/** The runner `choose` picks at the first run, kept for the later ones. */
class AutoIptables implements IptablesRunner {
  private chosen: Promise<IptablesRunner> | null = null;
  private picked: IptablesRunner | null = null;

  constructor(private readonly choose: () => Promise<IptablesRunner>) {}

  get where(): string {
    return this.picked?.where ?? 'not chosen yet';
  }

  async run(steps: readonly IptablesStep[]): Promise<IptablesOutcome[]> {
    this.chosen ??= this.choose().then((runner) => (this.picked = runner));
    return (await this.chosen).run(steps);
  }
}
