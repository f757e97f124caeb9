import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { BUILDPACKS_FILE, DomainError, planSourceBuild, type SourceFiles, type UseCases } from '@svc/core';
import { runGit, type GitEnvironment } from './git';
import type { HookRequest } from './hook';
import { DEFAULT_BRANCH, DEPLOY_BRANCHES, type RepositoryOwner, type RepositoryStore } from './repositories';

/** The use cases of the core the git server needs. */
export type GitUseCases = Pick<UseCases, 'authenticateKey' | 'authorizeGitAccess' | 'deploySource' | 'listRetainedWorkdirs' | 'checkBuilds'>;

/** The structured logger the git server writes to; pino's logger satisfies it. */
export interface GitLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Who pushes to which app's repository. */
export interface Push {
  fingerprint: string;
  username: string;
  app: RepositoryOwner;
  repository: string;
}

/** One line of git's pre-receive input. */
interface RefUpdate {
  oldSha: string;
  newSha: string;
  ref: string;
}

const ZERO = /^0+$/;
const SHA = /^[0-9a-f]{40}$/;
const BRANCH_PREFIX = 'refs/heads/';
const step = (text: string): string => `-----> ${text}`;
const detail = (text: string): string => `       ${text}`;

function parseUpdates(text: string): RefUpdate[] {
  const updates: RefUpdate[] = [];
  for (const line of text.split('\n')) {
    const [oldSha, newSha, ref] = line.trim().split(' ');
    if (oldSha && newSha && ref && SHA.test(oldSha) && SHA.test(newSha)) updates.push({ oldSha, newSha, ref });
  }
  return updates;
}

const branchOf = (ref: string): string | null => (ref.startsWith(BRANCH_PREFIX) ? ref.slice(BRANCH_PREFIX.length) : null);

/** Every message of a domain error, one per line (validation failures may carry several). */
function messagesOf(error: DomainError): string[] {
  const fields = Object.values(error.fields ?? {}).flat();
  return fields.length > 0 ? fields : [error.message];
}

/** What the pusher is told about how the commit will build, one line each. */
function describeSource(types: string[], files: SourceFiles, compiled: boolean): string[] {
  const declared = types.length > 0 ? `Procfile declares ${types.join(', ')}` : null;
  if (compiled) return [declared === null ? 'No Procfile: the buildpack decides what runs' : `${declared}; a buildpack compiles the app`];
  return [declared ?? 'No Procfile: the Dockerfile decides what runs', ...(files.dockerfile !== null ? ['Dockerfile found'] : [])];
}

/** Thrown to refuse a push with a message for the pusher. */
class Refused extends Error {}

/**
 * Builds what is pushed to an app's default branch: checks the commit out into a build
 * directory, reads its Procfile and Dockerfile, has the core record the build and release
 * and deploy it, and removes the build directories no release can return to any more.
 */
export class SourceBuilder {
  constructor(
    private readonly useCases: GitUseCases,
    private readonly store: RepositoryStore,
    private readonly logger: GitLogger,
    private readonly appUrl: (appId: string) => string | null,
  ) {}

  /** Decides a push from its pre-receive hook: resolves with 0 to let the refs move, non-zero to refuse them all. */
  async preReceive(push: Push, request: HookRequest, say: (line: string) => void): Promise<number> {
    try {
      return await this.build(push, request, say);
    } catch (error) {
      if (error instanceof Refused) {
        for (const line of error.message.split('\n')) say(`!      ${line}`);
        return 1;
      }
      throw error;
    }
  }

  private async build(push: Push, request: HookRequest, say: (line: string) => void): Promise<number> {
    const updates = parseUpdates(request.updates);
    const head = await this.headBranch(push.repository);
    const headExists = await this.branchExists(push.repository, head);
    for (const update of updates) {
      if (update.ref === `${BRANCH_PREFIX}${head}` && ZERO.test(update.newSha)) {
        throw new Refused(`${head} cannot be deleted: it is the branch ${push.app.id} is deployed from.`);
      }
    }
    // The branch HEAD names deploys; before it has a commit, a first push of main or master picks it.
    const deployed = updates.find((u) => !ZERO.test(u.newSha) && (u.ref === `${BRANCH_PREFIX}${head}`))
      ?? (headExists ? undefined : updates.find((u) => !ZERO.test(u.newSha) && DEPLOY_BRANCHES.includes(branchOf(u.ref) ?? '')));
    const deployBranch = deployed === undefined ? head : (branchOf(deployed.ref) as string);
    for (const update of updates) {
      if (update !== deployed) {
        say(detail(`${update.ref} ${ZERO.test(update.newSha) ? 'deleted' : 'stored'}; only pushes to ${deployBranch} deploy.`));
      }
    }
    if (deployed === undefined) return 0;

    const branch = branchOf(deployed.ref) as string;
    const sha = deployed.newSha;
    const env = this.quarantineEnvironment(push, request);
    say(step(`Building ${push.app.id} from ${sha.slice(0, 7)} (${branch}), pushed by ${push.username}`));
    const type = (await runGit(['cat-file', '-t', sha], { env })).toString('utf8').trim();
    if (type !== 'commit') throw new Refused(`${branch} must point to a commit, not a ${type}.`);

    const files = await this.readSourceFiles(env, sha);
    // The core decides how the commit builds; its Procfile and Dockerfile are checked here so
    // that a commit it would refuse up front is refused before anything is checked out.
    const compiled = this.useCases.deploySource.compilesWithBuildpacks && files.dockerfile === null;
    try {
      const plan = planSourceBuild(push.app.id, sha, files, { compiled });
      for (const line of describeSource(Object.keys(plan.procfile), files, compiled)) say(detail(line));
    } catch (error) {
      if (DomainError.is(error)) throw new Refused(messagesOf(error).join('\n'));
      throw error;
    }
    // A build that cannot run here is refused now, with the sentence /readyz gives, not once checked out and opened.
    const blocked = await this.useCases.checkBuilds.execute(files);
    if (blocked.length > 0) {
      this.logger.info({ app: push.app.id, user: push.username, sha, reasons: blocked }, 'git push refused: builds cannot run');
      throw new Refused([...blocked, 'No build was made and the branch did not move: push again once the operator has fixed this.'].join('\n'));
    }

    const { workdir, created } = await this.checkout(push.app.id, env, sha);
    say(step(created ? `Checked out ${sha.slice(0, 7)}` : `Reusing the checkout of ${sha.slice(0, 7)}`));
    say(step(compiled ? 'Compiling with buildpacks, then releasing and starting processes' : 'Releasing and starting processes'));
    let published;
    try {
      // With an image builder or buildpacks the build's own output comes first, one line at a time.
      published = await this.useCases.deploySource.execute(push.fingerprint, push.app.id, { sha, ...files, workdir }, (line) => say(detail(line)));
    } catch (error) {
      if (created) await rm(workdir, { recursive: true, force: true });
      if (!DomainError.is(error)) throw error;
      this.logger.info({ app: push.app.id, user: push.username, sha, code: error.code }, 'git push refused');
      throw new Refused(['Deploy failed; no release was made and the branch did not move.', ...messagesOf(error)].join('\n'));
    }

    const structure = Object.entries(published.app.structure).map(([processType, count]) => `${processType}=${count}`).join(' ');
    say(step(`Released v${published.release.version}${structure ? ` (${structure})` : ''}`));
    const url = this.appUrl(push.app.id);
    if (url !== null) say(detail(url));
    this.logger.info({ app: push.app.id, user: push.username, sha, release: published.release.version }, 'git push released');

    if (branch !== head) await runGit(['symbolic-ref', 'HEAD', `${BRANCH_PREFIX}${branch}`], { env: this.store.environment({ GIT_DIR: push.repository }) });
    const removed = await this.prune(push.app.id);
    if (removed > 0) say(detail(`Removed ${removed} old build director${removed === 1 ? 'y' : 'ies'} no release can return to`));
    return 0;
  }

  /** git's view of the push: the repository plus the pushed objects still in quarantine. */
  private quarantineEnvironment(push: Push, request: HookRequest): GitEnvironment {
    const objects = resolve(request.cwd || push.repository, request.objectDirectory);
    const inside = relative(push.repository, objects);
    // The hook runs in the repository; its objects cannot be anywhere else.
    if (request.objectDirectory === '' || inside.startsWith('..') || isAbsolute(inside)) {
      throw new Error(`The push's object directory ${objects} is outside ${push.repository}`);
    }
    const alternates = request.alternates.split(':').filter(Boolean).map((dir) => resolve(request.cwd || push.repository, dir));
    return this.store.environment({
      GIT_DIR: push.repository,
      GIT_OBJECT_DIRECTORY: objects,
      GIT_ALTERNATE_OBJECT_DIRECTORIES: alternates.join(':'),
    });
  }

  /** The commit's Procfile, Dockerfile and `.buildpacks` at its top level, when they are regular files. */
  private async readSourceFiles(env: GitEnvironment, sha: string): Promise<SourceFiles> {
    const listing = (await runGit(['ls-tree', '-z', sha, '--', 'Procfile', 'Dockerfile', BUILDPACKS_FILE], { env })).toString('utf8');
    const files: SourceFiles = { procfile: null, dockerfile: null, buildpacks: null };
    for (const entry of listing.split('\0').filter(Boolean)) {
      const match = /^(\d+) (\w+) ([0-9a-f]+)\t(Procfile|Dockerfile|\.buildpacks)$/.exec(entry);
      if (match === null) continue;
      const [, mode = '', kind = '', object = '', name = ''] = match;
      if (kind !== 'blob' || (mode !== '100644' && mode !== '100755')) {
        throw new Refused(`${name} must be a regular file (it is ${mode === '120000' ? 'a symbolic link' : `a ${kind}`}).`);
      }
      const size = Number((await runGit(['cat-file', '-s', object], { env })).toString('utf8').trim());
      if (size > 2 * 1024 * 1024) throw new Refused(`${name} is larger than 2 MiB.`);
      const text = (await runGit(['cat-file', 'blob', object], { env })).toString('utf8');
      if (name === 'Procfile') files.procfile = text;
      else if (name === 'Dockerfile') files.dockerfile = text;
      else files.buildpacks = text;
    }
    return files;
  }

  /**
   * The build directory of a commit, `<builds>/<app>/<sha>`: checked out next to it and
   * renamed into place, so a directory under that name is always complete. A commit pushed
   * again reuses its directory.
   */
  private async checkout(appId: string, env: GitEnvironment, sha: string): Promise<{ workdir: string; created: boolean }> {
    const builds = this.store.buildsOf(appId);
    const workdir = join(builds, sha);
    if (existsSync(workdir)) return { workdir, created: false };
    await mkdir(builds, { recursive: true });
    const staging = join(builds, `.incoming-${sha.slice(0, 7)}-${randomBytes(4).toString('hex')}`);
    const index = `${staging}.index`;
    try {
      await mkdir(staging);
      const withIndex = { ...env, GIT_INDEX_FILE: index };
      await runGit(['read-tree', sha], { env: withIndex });
      await runGit(['--work-tree', staging, 'checkout-index', '--all', '--force'], { env: withIndex });
      await rename(staging, workdir);
    } finally {
      await rm(staging, { recursive: true, force: true });
      await rm(index, { force: true });
    }
    return { workdir, created: true };
  }

  /** The branch the repository's HEAD names: the one that deploys. */
  private async headBranch(repository: string): Promise<string> {
    const ref = (await runGit(['symbolic-ref', 'HEAD'], { env: this.store.environment({ GIT_DIR: repository }) })).toString('utf8').trim();
    return branchOf(ref) ?? DEFAULT_BRANCH;
  }

  private async branchExists(repository: string, branch: string): Promise<boolean> {
    try {
      await runGit(['rev-parse', '--verify', '--quiet', `${BRANCH_PREFIX}${branch}`], { env: this.store.environment({ GIT_DIR: repository }) });
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the app's build directories that no kept build uses; resolves with how many went. */
  async prune(appId: string): Promise<number> {
    const builds = this.store.buildsOf(appId);
    if (!existsSync(builds)) return 0;
    const keep = new Set(await this.useCases.listRetainedWorkdirs.execute(appId));
    let removed = 0;
    for (const name of await readdir(builds)) {
      const path = join(builds, name);
      if (keep.has(path)) continue;
      await rm(path, { recursive: true, force: true });
      if (!name.startsWith('.')) removed += 1;
    }
    return removed;
  }
}
