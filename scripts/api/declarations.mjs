// The declarations of an API report (etc/<package>.api.md, written by API Extractor), by name,
// so that two reports can be compared declaration by declaration: which were removed, which
// changed, which were added. Comments are left out of the comparison: a doc comment written
// or reworded changes the report's text but not the API.
import { createHash } from 'node:crypto';

const DECLARATION =
  /^(?:export\s+)?(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:const\s+)?(class|interface|function|const|let|var|type|enum|namespace)\s+([A-Za-z_$][\w$]*)/;

/** The code block of a report: what lies between its ```ts fence and the closing fence. */
function codeOf(report) {
  const lines = report.replace(/\r\n/g, '\n').split('\n');
  const start = lines.findIndex((line) => line.trim() === '```ts');
  if (start === -1) return [];
  const end = lines.findIndex((line, index) => index > start && line.trim() === '```');
  return lines.slice(start + 1, end === -1 ? lines.length : end);
}

/** A declaration's text without comments or trailing blanks: what the comparison looks at. */
function normalise(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .filter((line) => !line.trim().startsWith('//'))
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '')
    .join('\n');
}

/**
 * The declarations of a report: a map from a key such as `class CreateApp` or
 * `function acmeNamesOf` to its text without comments. API Extractor separates top-level
 * declarations by one blank line and writes each overload of a function as a block of its
 * own: blocks with the same key are joined. A block that names no declaration (`export { x }`)
 * is keyed by its own text. Import lines are left out: they follow from the declarations.
 */
export function declarationsOf(report) {
  const declarations = new Map();
  let block = [];
  const flush = () => {
    const text = normalise(block.join('\n'));
    block = [];
    if (text === '' || /^import\s/.test(text)) return;
    const match = DECLARATION.exec(text);
    const key = match ? `${match[1]} ${match[2]}` : text.split('\n')[0];
    declarations.set(key, declarations.has(key) ? `${declarations.get(key)}\n${text}` : text);
  };
  for (const line of codeOf(report)) {
    if (line.trim() === '') flush();
    else block.push(line);
  }
  flush();
  return declarations;
}

/** A short, stable fingerprint of a declaration's text (whitespace runs count as one space). */
export function fingerprint(text) {
  return createHash('sha256').update(text.replace(/\s+/g, ' ').trim()).digest('hex').slice(0, 16);
}

/** Fingerprints of every declaration of a report, keyed and sorted by name. */
export function fingerprintsOf(report) {
  const entries = [...declarationsOf(report)].map(([key, text]) => [key, fingerprint(text)]);
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * What differs between two sets of fingerprints (`before`, `after`): the keys removed, changed
 * and added, each sorted.
 */
export function compareFingerprints(before, after) {
  const removed = [];
  const changed = [];
  const added = [];
  for (const [key, value] of Object.entries(before)) {
    if (!(key in after)) removed.push(key);
    else if (after[key] !== value) changed.push(key);
  }
  for (const key of Object.keys(after)) if (!(key in before)) added.push(key);
  return { removed: removed.sort(), changed: changed.sort(), added: added.sort() };
}

/** One line that names the changes, e.g. `removed: function a; changed: interface B`, at most `limit` names each. */
export function describeChanges({ removed, changed, added }, limit = 12) {
  const list = (names) => names.slice(0, limit).join(', ') + (names.length > limit ? `, and ${names.length - limit} more` : '');
  const parts = [];
  if (removed.length > 0) parts.push(`removed: ${list(removed)}`);
  if (changed.length > 0) parts.push(`changed: ${list(changed)}`);
  if (added.length > 0) parts.push(`added: ${list(added)}`);
  return parts.join('; ');
}
