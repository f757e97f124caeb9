import { processesOf } from './proc';
import { giveTree, type Sandbox } from './sandbox';
import { setTimeout as sleep } from 'node:timers/promises';

const APP_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** How one app's processes are confined: its user and its /etc files. */
export interface Confinement {
  uid: number;
  etcDir: string;
}

/** An app's user lent to a build (`ProcessScheduler.lendUser`); all null without a sandbox. */
export interface LentUser {
  sandbox: Sandbox | null;
  uid: number | null;
  etcDir: string | null;
  /** Gives the user back once the build is over; kills what is left of it when nothing else of the app runs. */
  release(): Promise<void>;
}

/**
 * The users of apps on one sandbox: each app's is its own for as long as anything of the app
 * runs (`running`, the scheduler's processes and one-off commands) or builds (a lent user),
 * and whatever still runs as an app's user once nothing of it does is killed.
 */
export class AppUsers {
  /** Apps with builds in progress, and how many. */
  private readonly builds = new Map<string, number>();

  constructor(
    private readonly sandbox: Sandbox | null,
    private readonly running: () => Set<string>,
  ) {}

  /** The app's user (given now if it has none) and /etc files, and `dir` given to it; null without a sandbox. */
  async confine(app: string, dir: string): Promise<Confinement | null> {
    if (this.sandbox === null) return null;
    if (!APP_ID.test(app)) throw new Error(`unusable app id "${app}"`);
    const uid = this.sandbox.uidFor(app, this.active());
    const etcDir = this.sandbox.prepareEtc(app, uid);
    await giveTree(dir, uid);
    return { uid, etcDir };
  }

  /** Lends the app's user to a build until `release` (see `ProcessScheduler.lendUser`). */
  async lend(app: string): Promise<LentUser> {
    if (!APP_ID.test(app)) throw new Error(`unusable app id "${app}"`);
    this.builds.set(app, (this.builds.get(app) ?? 0) + 1);
    let released = false;
    const release = async (): Promise<void> => {
      if (released) return;
      released = true;
      const left = (this.builds.get(app) ?? 1) - 1;
      if (left > 0) this.builds.set(app, left);
      else this.builds.delete(app);
      await this.sweep(app);
    };
    if (this.sandbox === null) return { sandbox: null, uid: null, etcDir: null, release };
    try {
      const uid = this.sandbox.uidFor(app, this.active());
      return { sandbox: this.sandbox, uid, etcDir: this.sandbox.prepareEtc(app, uid), release };
    } catch (error) {
      await release();
      throw error;
    }
  }

  /**
   * Kills whatever still runs as the app's user once nothing of the app runs or builds: a
   * process can leave its process group and session, never its user.
   */
  async sweep(app: string): Promise<void> {
    if (this.sandbox === null || this.active().has(app)) return;
    const uid = this.sandbox.knownUid(app);
    if (uid === null) return;
    for (let attempt = 0; attempt < 20; attempt++) {
      const left = await processesOf(uid);
      if (left.length === 0) return;
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      await sleep(50);
    }
  }

  /** The apps something of which runs or builds: their users are theirs. */
  private active(): Set<string> {
    const active = this.running();
    for (const app of this.builds.keys()) active.add(app);
    return active;
  }
}
