import { APP_ID_MAX, APP_ID_PATTERN } from '@svc/core';

/** The two git services this server runs: receiving a push, and serving a fetch or clone. */
export type GitService = 'git-receive-pack' | 'git-upload-pack';

/** What an SSH `exec` request asks for, once understood. */
export type GitRequest = { ok: true; service: GitService; appId: string } | { ok: false; message: string };

const COMMAND = /^git[- ](receive-pack|upload-pack)[ \t]+(?:'([^']*)'|"([^"]*)"|([^\s'"]+))[ \t]*$/;

/** A command as it may be echoed back: printable, short. */
export function printable(text: string): string {
  const clean = text.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 77)}...` : clean;
}

/**
 * Understands the command git sends over SSH, e.g. `git-receive-pack '/myapp.git'`: the
 * repository is `<app>` or `<app>.git`, with or without a leading or trailing slash.
 */
export function parseGitCommand(command: string): GitRequest {
  const match = COMMAND.exec(command.trim());
  if (match === null) {
    return {
      ok: false,
      message: `"${printable(command)}" is not allowed: this server only accepts git push, git fetch and git clone of an app's repository.`,
    };
  }
  const [, service = '', single, double, bare] = match;
  const path = single ?? double ?? bare ?? '';
  const appId = path.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '');
  if (appId.length === 0 || appId.length > APP_ID_MAX || !APP_ID_PATTERN.test(appId)) {
    return {
      ok: false,
      message: `"${printable(path)}" is not an app's repository: use <app>.git, e.g. ssh://git@<host>:<port>/myapp.git.`,
    };
  }
  return { ok: true, service: `git-${service}` as GitService, appId };
}
