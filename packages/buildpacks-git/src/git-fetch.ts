import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { directorySize } from './directory-size';
import { looksLikeCommit } from './fetch-rules';
import { runGit, type GitResult } from './git-command';

/** How a buildpack is fetched. */
export interface FetchLimits {
  git: string;
  timeoutMs: number;
  sizeLimitBytes: number;
}

/** Why a fetch failed, fit to show the pusher. */
export class FetchFailure extends Error {}

/**
 * Fetches `url` at `ref` (a branch, tag or commit; the remote's HEAD when null) into the
 * empty directory `target`, a work tree without `.git`, and resolves with the commit it holds.
 * Only the asked commit is transferred (a shallow fetch); a commit the remote does not serve
 * by name is looked for in a full fetch of its branches and tags. A failure leaves `target`
 * to the caller to remove.
 * @throws FetchFailure with git's reason, or the limit passed.
 */
export async function fetchIntoDirectory(url: string, ref: string | null, target: string, limits: FetchLimits): Promise<string> {
  const home = await mkdtemp(join(target, '..', '.home-'));
  try {
    await mkdir(target, { recursive: true });
    const deadline = Date.now() + limits.timeoutMs;
    const git = async (...args: string[]): Promise<GitResult> => {
      const result = await runGit(args, {
        git: limits.git,
        cwd: target,
        home,
        deadline,
        withinSize: async () => (await directorySize(target, limits.sizeLimitBytes)) <= limits.sizeLimitBytes,
      });
      if (result.stopped === 'timeout') throw new FetchFailure(`git did not finish within ${Math.round(limits.timeoutMs / 1000)} s`);
      if (result.stopped === 'size') throw new FetchFailure(`it is larger than ${formatBytes(limits.sizeLimitBytes)}`);
      return result;
    };
    const succeed = async (...args: string[]): Promise<string> => {
      const result = await git(...args);
      if (result.code !== 0) throw new FetchFailure(gitReason(result));
      return result.stdout;
    };

    await succeed('init', '--quiet', '--template=', '.');
    const shallow = await git('fetch', '--quiet', '--depth=1', '--no-tags', '--no-recurse-submodules', '--', url, ref ?? 'HEAD');
    if (shallow.code !== 0) {
      // A remote may refuse to serve a commit by its name (uploadpack.allowAnySHA1InWant unset):
      // then everything is fetched and the commit looked up here.
      if (ref === null || !looksLikeCommit(ref)) throw new FetchFailure(gitReason(shallow));
      await succeed('fetch', '--quiet', '--no-recurse-submodules', '--', url, '+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*');
      await succeed('checkout', '--quiet', '--detach', `${ref}^{commit}`, '--');
    } else {
      await succeed('checkout', '--quiet', '--detach', 'FETCH_HEAD', '--');
    }
    const commit = (await succeed('rev-parse', '--verify', 'HEAD^{commit}')).trim();
    await rm(join(target, '.git'), { recursive: true, force: true });
    if ((await directorySize(target, limits.sizeLimitBytes)) > limits.sizeLimitBytes) {
      throw new FetchFailure(`it is larger than ${formatBytes(limits.sizeLimitBytes)}`);
    }
    return commit;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** git's first `fatal:` or `error:` line without that prefix (else its last line); a generic reason when it printed none. */
export function gitReason(result: Pick<GitResult, 'code' | 'stderr'>): string {
  const lines = result.stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('hint:'));
  const reason = lines.find((line) => /^(fatal|error): /.test(line)) ?? lines[lines.length - 1];
  if (reason === undefined) return `git exited with status ${String(result.code)}`;
  return reason.replace(/^(fatal|error): /, '').slice(0, 300);
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024))} MiB` : `${bytes} bytes`;
}
