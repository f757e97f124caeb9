// Runs API Extractor over the compiled declarations (dist/, `tsc -b`) of every reported entry
// point: one `packages/<dir>/api-extractor*.json` per entry point, each extending the root's
// api-extractor.base.json. `api-extractor.json` reports the package's "." entry,
// `api-extractor.<subpath>.json` its "./<subpath>" entry (`@svc/core/testing`).
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { compareFingerprints, describeChanges, fingerprintsOf } from './declarations.mjs';

const require = createRequire(import.meta.url);
const { CompilerState, Extractor, ExtractorConfig } = require('@microsoft/api-extractor');

// What API Extractor says about the report itself; the script says it in its own words.
const REPORT_MESSAGES = new Set([
  'console-api-report-not-copied',
  'console-api-report-copied',
  'console-api-report-created',
  'console-api-report-diff',
  'console-api-report-unchanged',
  'console-writing-api-report',
]);

/**
 * Every reported entry point under `root`: { label, name, version, dir, configPath,
 * reportPath, relativePath, config }, sorted by label. `only` (directory names such as `core`,
 * or labels such as `@svc/core/testing`) narrows the list.
 */
export function findReports(root, only = []) {
  const packagesDir = join(root, 'packages');
  const reports = [];
  for (const dir of readdirSync(packagesDir).sort()) {
    const folder = join(packagesDir, dir);
    if (!existsSync(join(folder, 'package.json'))) continue;
    for (const file of readdirSync(folder).sort()) {
      const match = /^api-extractor(?:\.([a-z0-9-]+))?\.json$/.exec(file);
      if (!match) continue;
      const configPath = join(folder, file);
      const config = ExtractorConfig.loadFileAndPrepare(configPath);
      const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
      const label = match[1] ? `${manifest.name}/${match[1]}` : manifest.name;
      if (only.length > 0 && !only.includes(dir) && !only.includes(label)) continue;
      const reportPath = join(config.reportFolder, config.reportConfigs[0].fileName);
      reports.push({
        root,
        label,
        name: manifest.name,
        version: manifest.version,
        dir,
        configPath,
        config,
        reportPath,
        relativePath: relative(root, reportPath),
        tempPath: join(config.reportTempFolder, config.reportConfigs[0].fileName),
      });
    }
  }
  return reports.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
}

function read(path) {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

/** At most `limit` lines of a text, and how many were left out. */
function head(text, limit) {
  const lines = text.trimEnd().split('\n');
  return lines.slice(0, limit).join('\n') + (lines.length > limit ? `\n  ... ${lines.length - limit} more lines` : '');
}

/**
 * Runs API Extractor for each report. `update` writes the reports (a local build); otherwise the
 * committed reports are compared with what the declarations give now. Answers one result per
 * report: { report, ok, changed, lines } where `lines` is what to print.
 */
export function runReports(reports, { update }) {
  if (reports.length === 0) return [];
  // One TypeScript program for every entry point: the packages share their compiler options
  // and most of their declarations (the core's, Node's), so it is read once, not once each.
  const compilerState = CompilerState.create(reports[0].config, {
    additionalEntryPoints: reports.map((report) => report.config.mainEntryPointFilePath),
  });
  return reports.map((report) => {
    const lines = [];
    let problems = 0;
    const before = read(report.reportPath);
    if (!existsSync(report.config.mainEntryPointFilePath)) {
      lines.push(`${report.label}: ${relative(report.root, report.config.mainEntryPointFilePath)} is missing: build first (npm run build)`);
      return { report, ok: false, changed: false, lines };
    }
    mkdirSync(report.config.reportFolder, { recursive: true });
    let diff = '';
    const result = Extractor.invoke(report.config, {
      localBuild: update,
      compilerState,
      printApiReportDiff: !update,
      messageCallback(message) {
        message.handled = true;
        if (message.messageId === 'console-api-report-diff') diff = message.text.replace(/^Changes to the API report:\s*/, '');
        if (REPORT_MESSAGES.has(message.messageId)) return;
        if (message.logLevel === 'error' || message.logLevel === 'warning') {
          problems += 1;
          const where = message.sourceFilePath ? ` (${relative(report.root, message.sourceFilePath)}:${message.sourceFileLine})` : '';
          lines.push(`${report.label}: ${message.logLevel}: ${message.text}${where}`);
        }
      },
    });
    const after = read(update ? report.reportPath : report.tempPath) ?? '';
    const changes = describeChanges(compareFingerprints(before ? fingerprintsOf(before) : {}, fingerprintsOf(after)));
    if (update) {
      if (result.apiReportChanged) lines.push(`${report.label}: wrote ${report.relativePath}${before === undefined ? ' (new)' : ''}${changes ? ` (${changes})` : ''}`);
      return { report, ok: problems === 0, changed: result.apiReportChanged, lines };
    }
    if (result.apiReportChanged) {
      const what = before === undefined ? 'is missing' : `differs from what the compiled declarations give${changes ? ` (${changes})` : ' (comments or order only)'}`;
      lines.push(
        `${report.label}: the API report ${report.relativePath} ${what}. ` +
          `If the change is meant, run \`npm run api:update\` and commit ${report.relativePath}; ` +
          'a removed or changed declaration also needs a major changeset (`npx changeset`).',
      );
      if (diff) lines.push(head(diff, 60).replace(/^/gm, '    '));
    }
    return { report, ok: problems === 0 && !result.apiReportChanged, changed: result.apiReportChanged, lines };
  });
}
