// Breaking changes raise the major version. Each report has beside it the fingerprints of the
// declarations it had when the package's current version was released
// (etc/<package>.released.json, written by `npm run api:release`). When the committed report
// has lost or changed one of them, the package needs a pending changeset that raises its
// major version (`npx changeset`, "major"), unless its version's major is already above the
// released one. Additions never need one. See docs/adr/0032-checked-public-api.md.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareFingerprints, describeChanges, fingerprintsOf } from './declarations.mjs';

/** The snapshot of released declarations kept beside a report: `core.api.md` → `core.released.json`. */
export function releasedPathOf(reportPath) {
  return reportPath.replace(/\.api\.md$/, '.released.json');
}

function majorOf(version) {
  const major = Number.parseInt(String(version).split('.')[0] ?? '', 10);
  return Number.isNaN(major) ? 0 : major;
}

/**
 * The bump each package gets from the pending changesets (`.changeset/*.md`): a map from a
 * package name to the highest of `major`, `minor`, `patch` that a changeset names for it.
 */
export function pendingBumps(root) {
  const folder = join(root, '.changeset');
  const order = { patch: 1, minor: 2, major: 3 };
  const bumps = new Map();
  if (!existsSync(folder)) return bumps;
  for (const name of readdirSync(folder)) {
    if (!name.endsWith('.md') || name === 'README.md') continue;
    const text = readFileSync(join(folder, name), 'utf8').replace(/\r\n/g, '\n');
    const front = /^---\n([\s\S]*?)\n---/.exec(text);
    if (!front) continue;
    for (const line of front[1].split('\n')) {
      const entry = /^\s*["']?([^"':\s]+)["']?\s*:\s*(major|minor|patch)\s*$/.exec(line);
      if (!entry) continue;
      const [, pkg, bump] = entry;
      if (!bumps.has(pkg) || order[bump] > order[bumps.get(pkg)]) bumps.set(pkg, bump);
    }
  }
  return bumps;
}

/**
 * Whether one report keeps the semver rule. `report` is { name, version, reportPath, label };
 * the answer is { ok, message }, the message naming the package, the declarations and what
 * to do when it fails.
 */
export function checkReport(report, bumps) {
  const releasedPath = releasedPathOf(report.reportPath);
  if (!existsSync(releasedPath)) {
    return { ok: true, message: `${report.label}: no released declarations recorded yet (first release); nothing to compare` };
  }
  if (!existsSync(report.reportPath)) return { ok: true, message: `${report.label}: no committed report` };
  const released = JSON.parse(readFileSync(releasedPath, 'utf8'));
  if (majorOf(report.version) > majorOf(released.version)) {
    return {
      ok: true,
      message: `${report.label}: version ${report.version} already raises the major of ${released.version}; record it with npm run api:release once released`,
    };
  }
  const changes = compareFingerprints(released.declarations ?? {}, fingerprintsOf(readFileSync(report.reportPath, 'utf8')));
  const breaking = { removed: changes.removed, changed: changes.changed, added: [] };
  if (breaking.removed.length === 0 && breaking.changed.length === 0) {
    return { ok: true, message: `${report.label}: nothing removed or changed since ${released.version}` };
  }
  if (bumps.get(report.name) === 'major') {
    return { ok: true, message: `${report.label}: ${describeChanges(breaking)} since ${released.version}; a pending major changeset raises the version` };
  }
  return {
    ok: false,
    message:
      `${report.label}: compared with version ${released.version} as released, ${report.relativePath} breaks the API ` +
      `(${describeChanges(breaking)}) and no pending changeset raises the major version of ${report.name}` +
      (bumps.has(report.name) ? ` (the pending one says ${bumps.get(report.name)})` : '') +
      `. Add one with \`npx changeset\` (major for ${report.name}) and commit it, or keep the declarations as they were.`,
  };
}

/**
 * Records the released declarations of every report whose package version differs from the
 * recorded one (or that has none): the step after `changeset version`. Answers the labels written.
 */
export function recordReleases(reports) {
  const written = [];
  for (const report of reports) {
    if (!existsSync(report.reportPath)) continue;
    const releasedPath = releasedPathOf(report.reportPath);
    const previous = existsSync(releasedPath) ? JSON.parse(readFileSync(releasedPath, 'utf8')) : undefined;
    if (previous && previous.version === report.version) continue;
    const snapshot = {
      package: report.name,
      version: report.version,
      report: report.reportPath.split(/[\\/]/).pop(),
      declarations: fingerprintsOf(readFileSync(report.reportPath, 'utf8')),
    };
    writeFileSync(releasedPath, `${JSON.stringify(snapshot, null, 2)}\n`);
    written.push(`${report.label} ${report.version}`);
  }
  return written;
}
