import type { LentUser, Confinement } from './app-users';
import { AppUsers } from './app-users';
import type { ProcessCgroup } from './container-limits';
import { LoopbackFirewall } from './egress';
import { APP_MOUNT, SANDBOX_PATH, Sandbox, type SandboxedCommand } from './sandbox';
import type { ProcessSchedulerOptions, SandboxStatus } from './scheduler-options';

const messageOf = (error: unknown): string => (error instanceof Error && error.message ? error.message : String(error));

/**
 * How the process scheduler confines apps: the sandbox (a user of each app's own, bubblewrap,
 * cgroups), the loopback firewall, and the environment processes start from. Without sandbox
 * options, apps run unconfined as the controller's user.
 */
export class AppConfinement {
  readonly sandbox: Sandbox | null;
  readonly users: AppUsers;
  private readonly firewall: LoopbackFirewall | null;
  private readonly baseEnvironment: Record<string, string>;
  private preparing: Promise<SandboxStatus> | null = null;
  private firewallInstalled = false;
  private readonly outliveController: boolean;

  private readonly hint: string;

  constructor(
    sandboxDir: string,
    options: Pick<ProcessSchedulerOptions, 'sandbox' | 'sandboxHint' | 'baseEnvironment' | 'outliveController'>,
    runningApps: () => Set<string>,
    private readonly closing: () => boolean,
  ) {
    this.sandbox = options.sandbox === null ? null : new Sandbox(sandboxDir, options.sandbox);
    this.hint = options.sandboxHint ?? '';
    this.outliveController = options.outliveController ?? false;
    this.users = new AppUsers(this.sandbox, runningApps);
    this.firewall = this.sandbox === null ? null : new LoopbackFirewall(this.sandbox.range, this.sandbox.buildGroup, options.sandbox?.buildAllowed ?? []);
    this.baseEnvironment = options.baseEnvironment ?? { PATH: this.sandbox !== null ? SANDBOX_PATH : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin') };
  }

  /** Sets the confinement up once (see ProcessScheduler.prepare); later calls return the first one's status. */
  prepare(allowLocalPorts: number[] | Promise<number[]>, controllerPorts: number[] | Promise<number[]>): Promise<SandboxStatus> {
    this.preparing ??= (async (): Promise<SandboxStatus> => {
      if (this.sandbox === null || this.firewall === null) return { mode: 'off', problem: null };
      const hint = this.hint ? `. ${this.hint}` : '';
      const problem = await this.sandbox.problem();
      const ports = await allowLocalPorts;
      const ownPorts = await controllerPorts;
      if (problem !== null) return { mode: 'unavailable', problem: `apps cannot run: the sandbox is unavailable: ${problem}${hint}` };
      await this.sandbox.cgroups.removeLeftovers();
      try {
        await this.firewall.install(ports, ownPorts);
        this.firewallInstalled = true;
        // A shutdown meanwhile found no rules to take away.
        if (this.closing()) await this.firewall.remove();
      } catch (error) {
        await this.firewall.remove().catch(() => undefined);
        return { mode: 'unavailable', problem: `apps cannot run: their network rules cannot be installed: ${messageOf(error)}${hint}` };
      }
      return { mode: 'on', problem: null };
    })();
    return this.preparing;
  }

  /** @throws Error with the reason when apps cannot be confined as they must. */
  async assertConfinable(): Promise<void> {
    const status = await this.prepare([], []);
    if (status.problem !== null) throw new Error(status.problem);
  }

  /** Lends the app's user to a build (see ProcessScheduler.lendUser). */
  lend(app: string): Promise<LentUser> {
    return this.users.lend(app);
  }

  /** The environment of a process: the base, HOME, the release's values, and its PORT. */
  environment(env: Record<string, string>, cwd: string, port: number): Record<string, string> {
    return { ...this.baseEnvironment, HOME: this.sandbox === null ? cwd : APP_MOUNT, ...env, PORT: String(port) };
  }

  /**
   * The sandbox command line of a process, or null when apps run unconfined. A container's
   * sandbox outlives the controller process when the scheduler lets its processes do so
   * (`outliveController`); a one-off command's never does. @throws Error when the app has no user yet.
   */
  sandboxed(
    app: string,
    confinement: Confinement | null,
    cwd: string,
    command: string,
    nice: number,
    cgroup: ProcessCgroup | null,
    kind: 'container' | 'run' = 'run',
  ): SandboxedCommand | null {
    if (this.sandbox === null) return null;
    if (confinement === null) throw new Error('the app has no user of its own');
    return this.sandbox.command({ app, uid: confinement.uid, hostDir: cwd, command, nice, etcDir: confinement.etcDir, cgroupProcs: cgroup?.cgroup.procsFiles ?? [], outlivesController: kind === 'container' && this.outliveController });
  }

  /** Takes away the cgroups and the firewall rules (at shutdown, once every process is gone). */
  async remove(): Promise<void> {
    await this.sandbox?.cgroups.removeAll().catch(() => undefined);
    if (this.firewallInstalled) await this.firewall?.remove().catch(() => undefined);
  }
}
