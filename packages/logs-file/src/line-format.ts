import type { LogEntry } from '@svc/core';

/*
 * One entry per line: `<ISO time>\t<source>\t<message>\n`. Backslash, newline, carriage
 * return and tab are escaped in source and message, so a line is always exactly one
 * line and always has exactly three tab-separated fields, whatever the app printed.
 */

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const UNESCAPES: Record<string, string> = { '\\': '\\', n: '\n', r: '\r', t: '\t' };

/** Escapes the characters that would break the one-line, three-field layout. */
export function escapeField(text: string): string {
  return text.replace(/[\\\n\r\t]/g, (ch) => ESCAPES[ch] as string);
}

/** Reverses escapeField; an unknown escape is kept as it is. */
export function unescapeField(text: string): string {
  return text.replace(/\\(.?)/gs, (whole, ch: string) => UNESCAPES[ch] ?? whole);
}

/** The stored line of an entry, with its terminating newline. */
export function formatLine(entry: LogEntry): string {
  return `${entry.time.toISOString()}\t${escapeField(entry.source)}\t${escapeField(entry.message)}\n`;
}

/** The entry of a stored line (without its newline), or null when the line is not one we wrote. */
export function parseLine(line: string): LogEntry | null {
  const fields = line.split('\t');
  if (fields.length !== 3) return null;
  const [time, source, message] = fields as [string, string, string];
  const millis = Date.parse(time);
  if (Number.isNaN(millis)) return null;
  return { time: new Date(millis), source: unescapeField(source), message: unescapeField(message) };
}
