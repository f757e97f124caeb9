import { existsSync, readFileSync } from 'node:fs';
import { seg } from '../api';
import { appOption, type Registrar } from '../command';
import { UsageError } from '../errors';
import { print, printFields, printJson, printTable, withProgress } from '../output';

interface BuildJson {
  uuid: string;
  image: string;
  sha: string;
  procfile: Record<string, string>;
  owner: string;
  created: string;
}

interface ReleaseJson {
  uuid: string;
  version: number;
  summary: string;
  build: string | null;
  config: string;
  owner: string;
  created: string;
  updated: string;
}

/** A Procfile given as JSON text, as a Procfile path, or as `type: command` lines. */
function procfileOf(given: string): Record<string, string> {
  const text = existsSync(given) ? readFileSync(given, 'utf8') : given;
  if (text.trim().startsWith('{')) {
    try {
      return JSON.parse(text) as Record<string, string>;
    } catch {
      throw new UsageError('--procfile is not valid JSON');
    }
  }
  const procfile: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*([a-z0-9_-]+)\s*:\s*(.+)$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) procfile[match[1]] = match[2].trim();
    else if (line.trim() !== '' && !line.trim().startsWith('#')) throw new UsageError(`--procfile: not a "type: command" line: ${line.trim()}`);
  }
  return procfile;
}

function versionNumber(text: string): number {
  const match = /^v?(\d+)$/.exec(text.trim());
  if (match?.[1] === undefined) throw new UsageError(`not a release version: ${text} (e.g. v3)`);
  return Number(match[1]);
}

/** builds, builds:create, releases, releases:info, releases:rollback. */
export function registerReleases(r: Registrar): void {
  r.command(
    'builds',
    "list an app's builds, newest first",
    async (ctx) => {
      const builds = await ctx.authed().all<BuildJson>(`/v1/apps/${seg(ctx.app())}/builds/`);
      if (ctx.json) printJson(ctx.io, builds);
      else printTable(ctx.io, ['uuid', 'image', 'sha', 'owner', 'created'], builds.map((b) => [b.uuid, b.image, b.sha.slice(0, 7), b.owner, b.created]), 'no builds');
    },
    (c) => {
      c.alias('builds:list');
      appOption(c);
    },
  );

  r.command(
    'builds:create <image>',
    'deploy an image: a new build and release, processes start on it',
    async (ctx, [image], options) => {
      const app = ctx.app();
      const body: Record<string, unknown> = { image };
      if (typeof options.procfile === 'string') body.procfile = procfileOf(options.procfile);
      if (typeof options.sha === 'string') body.sha = options.sha;
      if (typeof options.dockerfile === 'string') body.dockerfile = readFileSync(options.dockerfile, 'utf8');
      const response = await withProgress(ctx.io, `Deploying ${image} to ${app}`, () =>
        ctx.authed().request('POST', `/v1/apps/${seg(app)}/builds/`, { body }),
      );
      if (ctx.json) printJson(ctx.io, response.body);
      else print(ctx.io, `Deployed ${image} to ${app}: release v${response.headers.get('svc-release') ?? '?'}`);
    },
    (c) => {
      c.option('--procfile <procfile>', 'process types: JSON, a Procfile path, or "web: command" lines')
        .option('--sha <sha>', 'the source commit')
        .option('--dockerfile <path>', 'a Dockerfile to record with the build');
      appOption(c);
    },
  );

  r.command(
    'releases',
    "list an app's releases, newest first",
    async (ctx) => {
      const releases = await ctx.authed().all<ReleaseJson>(`/v1/apps/${seg(ctx.app())}/releases/`);
      if (ctx.json) printJson(ctx.io, releases);
      else printTable(ctx.io, ['version', 'summary', 'created'], releases.map((x) => [`v${x.version}`, x.summary, x.created]));
    },
    (c) => {
      c.alias('releases:list');
      appOption(c);
    },
  );

  r.command(
    'releases:info <version>',
    'show one release (e.g. v3)',
    async (ctx, [version]) => {
      const release = await ctx.authed().get<ReleaseJson>(`/v1/apps/${seg(ctx.app())}/releases/v${versionNumber(version ?? '')}/`);
      if (ctx.json) printJson(ctx.io, release);
      else
        printFields(ctx.io, [
          ['version', `v${release.version}`],
          ['summary', release.summary],
          ['build', release.build ?? '(none)'],
          ['config', release.config],
          ['owner', release.owner],
          ['created', release.created],
          ['uuid', release.uuid],
        ]);
    },
    appOption,
  );

  r.command(
    'releases:rollback [version]',
    'roll back to an earlier release (default: the one before the current one), as a new release',
    async (ctx, [version]) => {
      const app = ctx.app();
      const body = version === undefined ? {} : { version: versionNumber(version) };
      const result = await withProgress(ctx.io, `Rolling back ${app}`, () =>
        ctx.authed().post<{ version: number }>(`/v1/apps/${seg(app)}/releases/rollback/`, body),
      );
      if (ctx.json) printJson(ctx.io, result);
      else print(ctx.io, `Rolled back ${app}${version === undefined ? '' : ` to v${versionNumber(version)}`}: release v${result.version}`);
    },
    (c) => {
      c.alias('rollback');
      appOption(c);
    },
  );
}
