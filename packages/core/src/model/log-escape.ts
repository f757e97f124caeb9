import type { LogEntry } from './entities';
import type { LogListener, LogStore } from '../ports/services';

/**
 * Characters a log line must not carry as they are: C0 controls but tab (escape sequences,
 * carriage return, backspace, newline), DEL, C1 controls (U+0080 to U+009F, CSI among
 * them), and the invisible characters that reorder or break a line when shown (bidirectional
 * marks, embeddings, overrides and isolates; line and paragraph separators).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * The text with every unsafe character written as an escape: `\xNN` (two lower-case hex
 * digits) up to U+00FF, `\uNNNN` above; every other character, printable Unicode included,
 * is kept. Escaping escaped text changes nothing.
 */
export function escapeLogText(text: string): string {
  return text.replace(UNSAFE, (ch) => {
    const code = ch.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** The entry with its source and message escaped (see escapeLogText). */
export function escapeLogEntry(entry: LogEntry): LogEntry {
  return { time: entry.time, source: escapeLogText(entry.source), message: escapeLogText(entry.message) };
}

/**
 * A LogStore that escapes control characters in every entry before the store it wraps keeps
 * it, so that what is stored, read back and streamed to followers cannot move a terminal's
 * cursor, recolour it, or pass an app's output off as a platform line. The composition root
 * wraps whatever store it uses; every writer (app output, builds, platform events) goes
 * through it.
 */
export class EscapingLogStore implements LogStore {
  constructor(private readonly inner: LogStore) {}

  append(app: string, entries: LogEntry[]): Promise<void> {
    return this.inner.append(app, entries.map(escapeLogEntry));
  }

  tail(app: string, lines: number): Promise<LogEntry[]> {
    return this.inner.tail(app, lines);
  }

  remove(app: string): Promise<void> {
    return this.inner.remove(app);
  }

  subscribe(app: string, listener: LogListener): () => void {
    return this.inner.subscribe(app, listener);
  }
}
