/*
 * How a scheduler reads what a container prints: into log lines, into a one-off command's
 * capped output, and into the last lines that tell why a start failed. Bytes are Uint8Array
 * (a Buffer is one), so the core needs no Node API.
 */
import { escapeLogText } from '../model/log-escape';

/** Lines longer than this are cut into several log lines. */
export const MAX_LINE_LENGTH = 16 * 1024;

/** Splits a byte stream into text lines, across chunk boundaries and multi-byte characters. */
export class LineSplitter {
  private readonly decoder = new TextDecoder('utf-8');
  private pending = '';

  constructor(private readonly maxLength = MAX_LINE_LENGTH) {}

  /** The complete lines the chunk finishes (without their line ends; a CR before LF is dropped). */
  push(chunk: Uint8Array): string[] {
    this.pending += this.decoder.decode(chunk, { stream: true });
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    while (this.pending.length > this.maxLength) {
      lines.push(this.pending.slice(0, this.maxLength));
      this.pending = this.pending.slice(this.maxLength);
    }
    return lines.flatMap((line) => this.cut(line.endsWith('\r') ? line.slice(0, -1) : line));
  }

  /** What is left once the stream has ended: a last line without a line end, if any. */
  end(): string[] {
    const rest = this.pending + this.decoder.decode();
    this.pending = '';
    return rest === '' ? [] : this.cut(rest);
  }

  private cut(line: string): string[] {
    if (line.length <= this.maxLength) return [line];
    const parts: string[] = [];
    for (let at = 0; at < line.length; at += this.maxLength) parts.push(line.slice(at, at + this.maxLength));
    return parts;
  }
}

/** The longest prefix of `bytes` of at most `limit` bytes that does not cut a UTF-8 character. */
export function utf8Prefix(bytes: Uint8Array, limit: number): Uint8Array {
  if (bytes.length <= limit) return bytes;
  let end = Math.max(0, limit);
  // Step back over continuation bytes (10xxxxxx) to the start of the character that was cut.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

const encoder = new TextEncoder();

/**
 * Keeps the output of a one-off command up to a byte limit, dropping the rest as it comes
 * (the command is read to its end, so it never blocks on a full pipe).
 */
export class CappedOutput {
  private readonly chunks: Uint8Array[] = [];
  private kept = 0;
  private total = 0;

  /** @param limit the most bytes the final text may have, notes included. */
  constructor(private readonly limit: number) {}

  push(chunk: Uint8Array): void {
    this.total += chunk.length;
    // One byte beyond the limit tells that the output was longer than it.
    const room = this.limit + 1 - this.kept;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(part);
    this.kept += part.length;
  }

  /** Bytes received in all, kept or not. */
  get received(): number {
    return this.total;
  }

  /**
   * The output as text, at most `limit` bytes: when it (with the notes) does not fit, it is
   * cut and ends with a note that says so; `notes` (e.g. a timeout) are appended on their own lines.
   */
  text(notes: string[] = []): string {
    const all = new Uint8Array(this.kept);
    let at = 0;
    for (const chunk of this.chunks) {
      all.set(chunk, at);
      at += chunk.length;
    }
    const tail = notes.map((note) => `\n[${note}]`).join('');
    const tailBytes = encoder.encode(tail).length;
    const decode = (bytes: Uint8Array): string => new TextDecoder('utf-8').decode(bytes);
    if (all.length + tailBytes <= this.limit) return decode(all) + tail;
    const truncated = `\n[output truncated at ${this.limit} bytes]`;
    const keep = this.limit - tailBytes - encoder.encode(truncated).length;
    return decode(utf8Prefix(all, keep)) + truncated + tail;
  }
}

/** The most lines of its output a failed start reports. */
export const FAILURE_OUTPUT_LINES = 20;
/** The longest line of output a failure repeats, in characters. */
const FAILURE_LINE_LENGTH = 200;

/**
 * One line of output as a failure's reason shows it: trimmed, unsafe characters escaped as
 * in the log (see escapeLogText), at most 200 characters. Showing a shown line changes nothing.
 */
export function shownOutputLine(line: string): string {
  const text = escapeLogText(line.trim());
  return text.length > FAILURE_LINE_LENGTH ? `${text.slice(0, FAILURE_LINE_LENGTH)}…` : text;
}

/**
 * The lines of output as the end of a failure's reason (`; last output: ...`, one line after
 * the other, blank ones left out, each shown by {@link shownOutputLine}); empty when there is
 * none. A single line (a crash's) stays on the reason's line.
 */
export function lastOutputNote(lines: string | readonly string[] | null): string {
  const shown = (lines === null ? [] : typeof lines === 'string' ? [lines] : lines).map(shownOutputLine).filter((line) => line !== '');
  return shown.length === 0 ? '' : `; last output: ${shown.join('\n')}`;
}

/** The last lines a container printed, kept (as {@link shownOutputLine} shows them, blank ones skipped) to tell why it failed. */
export class OutputTail {
  private readonly kept: string[] = [];

  constructor(private readonly size = FAILURE_OUTPUT_LINES) {}

  push(line: string): void {
    const text = shownOutputLine(line);
    if (text === '') return;
    this.kept.push(text);
    if (this.kept.length > this.size) this.kept.shift();
  }

  clear(): void {
    this.kept.length = 0;
  }

  /** The kept lines, oldest first. */
  lines(): string[] {
    return [...this.kept];
  }

  /** What a failure appends: the last `count` lines (all kept by default) as {@link lastOutputNote} writes them. */
  note(count = this.size): string {
    return lastOutputNote(this.kept.slice(-count));
  }
}
