import { existsSync } from 'node:fs';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GitCommandFailed, baseGitEnvironment, runGit, type GitEnvironment } from './git';
import { PRE_RECEIVE_SCRIPT } from './hook';

/** The branch a new repository starts with; pushes to it (or to `master`) deploy. */
export const DEFAULT_BRANCH = 'main';
/** The branches whose pushes deploy. */
export const DEPLOY_BRANCHES: readonly string[] = Object.freeze(['main', 'master']);

const APP_UUID_KEY = 'svc.app';

/** The app a repository belongs to: its name, and the uuid that tells a re-created app of the same name apart. */
export interface RepositoryOwner {
  id: string;
  uuid: string;
}

/**
 * The bare repositories, one per app at `<root>/<app>.git`, and the build directories of
 * each app under `<buildsRoot>/<app>/`.
 */
export class RepositoryStore {
  constructor(
    readonly root: string,
    readonly buildsRoot: string,
  ) {}

  /** The environment of git commands run by the controller itself. */
  environment(extra: GitEnvironment = {}): GitEnvironment {
    return { ...baseGitEnvironment(this.root), ...extra };
  }

  /** Where an app's bare repository is. */
  pathOf(appId: string): string {
    return join(this.root, `${appId}.git`);
  }

  /** Where an app's build directories are. */
  buildsOf(appId: string): string {
    return join(this.buildsRoot, appId);
  }

  /**
   * Makes sure the app has its repository, with the platform's hook, and resolves with its
   * path. A repository left by a deleted app of the same name is removed first, with its
   * build directories: a new app never sees another's history.
   */
  async prepare(app: RepositoryOwner): Promise<string> {
    const path = this.pathOf(app.id);
    if (existsSync(path) && (await this.ownerOf(path)) !== app.uuid) {
      await rm(path, { recursive: true, force: true });
      await rm(this.buildsOf(app.id), { recursive: true, force: true });
    }
    if (!existsSync(path)) await this.create(path, app);
    const hooks = join(path, 'hooks');
    await mkdir(hooks, { recursive: true });
    // Written on every push, so an upgrade of the controller reaches existing repositories.
    await writeFile(join(hooks, 'pre-receive'), PRE_RECEIVE_SCRIPT, { mode: 0o755 });
    await chmod(join(hooks, 'pre-receive'), 0o755);
    return path;
  }

  private async ownerOf(path: string): Promise<string | null> {
    try {
      return (await runGit(['config', '--get', APP_UUID_KEY], { env: this.environment({ GIT_DIR: path }) })).toString('utf8').trim();
    } catch (error) {
      if (error instanceof GitCommandFailed) return null;
      throw error;
    }
  }

  private async create(path: string, app: RepositoryOwner): Promise<void> {
    await mkdir(this.root, { recursive: true });
    // Built beside its final name, then renamed: a crash never leaves a half-made repository in place.
    const staging = `${path}.creating-${process.pid}-${Date.now()}`;
    try {
      const env = this.environment();
      await runGit(['init', '--quiet', '--bare', '--template=', `--initial-branch=${DEFAULT_BRANCH}`, staging], { env });
      const config = (key: string, value: string) => runGit(['config', key, value], { env: this.environment({ GIT_DIR: staging }) });
      await config(APP_UUID_KEY, app.uuid);
      // Pushed objects are checked before they are accepted; force pushes and deletions of
      // branches other than the deployed ones are the pusher's business.
      await config('receive.fsckObjects', 'true');
      await config('receive.denyNonFastForwards', 'false');
      await runGit(['symbolic-ref', 'HEAD', `refs/heads/${DEFAULT_BRANCH}`], { env: this.environment({ GIT_DIR: staging }) });
      await rename(staging, path);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
}
