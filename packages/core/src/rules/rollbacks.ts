import type { Build } from '../model/entities';
import { isReleaseImage } from './sources';

/** How many runs of versions a refused rollback's message names at most (the newest ones). */
export const ROLLBACK_TARGETS_SHOWN = 10;

/**
 * Whether a rollback from `current` to `target` would leave an app that runs a build without
 * one: every process stopped, and later config changes without a build too. Rollbacks among
 * the build-less releases of an app that never had a build change no process and stay allowed.
 */
export function rollbackEmptiesApp(current: { build: string | null }, target: { build: string | null }): boolean {
  return target.build === null && current.build !== null;
}

/**
 * Whether a build's source (a pushed commit's checkout, or the image the platform built from
 * it, `<app>:<version>`) goes once the build is no longer among those kept (`BUILD_RETENTION`):
 * such a build can be rolled back to only while it is kept. A build of an image named through
 * the API stays usable.
 */
export function sourceGoesWithRetention(app: string, build: Pick<Build, 'image' | 'workdir'>): boolean {
  return Boolean(build.workdir) || isReleaseImage(app, build.image);
}

/**
 * Release versions as a reader takes them in: ascending, consecutive ones joined
 * (`v2 to v5, v7, v9 to v10`); past `ROLLBACK_TARGETS_SHOWN` runs only the newest are named,
 * with how many earlier versions were left out. `none` for an empty list.
 */
export function describeVersions(versions: readonly number[]): string {
  const sorted = [...new Set(versions)].sort((a, b) => a - b);
  const runs: Array<[number, number]> = [];
  for (const version of sorted) {
    const last = runs.at(-1);
    if (last !== undefined && last[1] === version - 1) last[1] = version;
    else runs.push([version, version]);
  }
  if (runs.length === 0) return 'none';
  const shown = runs.slice(-ROLLBACK_TARGETS_SHOWN);
  const text = shown.map(([from, to]) => (from === to ? `v${from}` : `v${from} to v${to}`)).join(', ');
  const left = runs.slice(0, -ROLLBACK_TARGETS_SHOWN).reduce((sum, [from, to]) => sum + to - from + 1, 0);
  return left === 0 ? text : `${text} (and ${left} earlier ${left === 1 ? 'one' : 'ones'})`;
}
