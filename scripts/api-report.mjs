#!/usr/bin/env node
// The checked public API (docs/adr/0032-checked-public-api.md). Needs the packages compiled
// (`npm run build`), which the npm scripts do first:
//
//   node scripts/api-report.mjs update   writes each package's report (npm run api:update)
//   node scripts/api-report.mjs check    fails when a committed report differs from the compiled
//                                        declarations, or loses or changes a released declaration
//                                        without a pending major changeset (npm run api:check)
//   node scripts/api-report.mjs semver   only the second half of check: released declarations
//                                        lost or changed need a pending major changeset
//   node scripts/api-report.mjs release  records the released declarations of every package
//                                        whose version changed (npm run api:release)
//
// Options: --root <dir> (the repository; this script's by default) and --only <dir or name>
// (repeatable) to narrow the packages.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findReports, runReports } from './api/extract.mjs';
import { checkReport, pendingBumps, recordReleases } from './api/semver.mjs';

function parse(argv) {
  const options = { command: undefined, root: join(dirname(fileURLToPath(import.meta.url)), '..'), only: [] };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--root') options.root = resolve(argv[++i] ?? '.');
    else if (arg === '--only') options.only.push(argv[++i] ?? '');
    else if (!options.command) options.command = arg;
    else throw new Error(`unexpected argument ${arg}`);
  }
  if (!['update', 'check', 'semver', 'release'].includes(options.command ?? '')) {
    throw new Error('usage: node scripts/api-report.mjs update|check|semver|release [--root dir] [--only package]');
  }
  return options;
}

function main() {
  const options = parse(process.argv.slice(2));
  const reports = findReports(options.root, options.only);
  if (reports.length === 0) {
    console.error(`api: no reported package under ${options.root}${options.only.length ? ` named ${options.only.join(', ')}` : ''}`);
    return 1;
  }

  if (options.command === 'release') {
    const written = recordReleases(reports);
    console.log(written.length ? `api: recorded the released declarations of ${written.join(', ')}` : 'api: every recorded release is at its package version');
    return 0;
  }

  const started = Date.now();
  const results = options.command === 'semver' ? [] : runReports(reports, { update: options.command === 'update' });
  for (const result of results) for (const line of result.lines) (result.ok ? console.log : console.error)(line);
  let failed = results.filter((result) => !result.ok).length;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);

  if (options.command === 'update') {
    const changed = results.filter((result) => result.changed).length;
    console.log(`api: ${results.length} reports, ${changed} written, in ${seconds} s`);
    return failed === 0 ? 0 : 1;
  }

  const bumps = pendingBumps(options.root);
  for (const report of reports) {
    const answer = checkReport(report, bumps);
    if (!answer.ok) {
      failed += 1;
      console.error(answer.message);
    }
  }
  const what = options.command === 'semver' ? 'keep the semver rule' : 'match the compiled declarations and keep the semver rule';
  console.log(failed === 0 ? `api: ${reports.length} reports ${what} (${seconds} s)` : `api: ${failed} problem(s) in ${reports.length} reports; see above`);
  return failed === 0 ? 0 : 1;
}

try {
  process.exitCode = main();
} catch (error) {
  console.error(`api: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
