import { StringDecoder } from 'node:string_decoder';
import { escapeLogText } from '@svc/core';

/** Lines longer than this are cut into several log lines. */
export const MAX_LINE_LENGTH = 16 * 1024;

/** Splits a byte stream into text lines, across chunk boundaries and multi-byte characters. */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  constructor(private readonly maxLength = MAX_LINE_LENGTH) {}

  /** The complete lines the chunk finishes (without their line ends). */
  push(chunk: Buffer): string[] {
    this.pending += this.decoder.write(chunk);
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
    const rest = this.pending + this.decoder.end();
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
export function utf8Prefix(bytes: Buffer, limit: number): Buffer {
  if (bytes.length <= limit) return bytes;
  let end = Math.max(0, limit);
  // Step back over continuation bytes (10xxxxxx) to the start of the character that was cut.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/**
 * Keeps the output of a one-off command up to a byte limit, reading (and dropping) the rest
 * so the command never blocks on a full pipe.
 */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private total = 0;

  /** @param limit the most bytes the final text may have, notes included. */
  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
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
    const all = Buffer.concat(this.chunks);
    const tail = notes.map((note) => `\n[${note}]`).join('');
    const tailBytes = Buffer.byteLength(tail);
    if (all.length + tailBytes <= this.limit) return all.toString('utf8') + tail;
    const truncated = `\n[output truncated at ${this.limit} bytes]`;
    const keep = this.limit - tailBytes - Buffer.byteLength(truncated);
    return utf8Prefix(all, keep).toString('utf8') + truncated + tail;
  }
}

/** The most lines of its output a failed start reports. */
export const FAILURE_OUTPUT_LINES = 20;
/** The longest line of output an error repeats, in characters. */
const FAILURE_LINE_LENGTH = 200;

/**
 * The last lines a process printed, kept to tell why it failed: blank lines are skipped, and
 * each line is escaped (no control character reaches a terminal or a log) and cut at 200 characters.
 */
export class OutputTail {
  private readonly lines: string[] = [];

  constructor(private readonly size = FAILURE_OUTPUT_LINES) {}

  push(line: string): void {
    const text = escapeLogText(line.trim());
    if (text === '') return;
    this.lines.push(text.length > FAILURE_LINE_LENGTH ? `${text.slice(0, FAILURE_LINE_LENGTH)}…` : text);
    if (this.lines.length > this.size) this.lines.shift();
  }

  clear(): void {
    this.lines.length = 0;
  }

  /** The last lines. */
  get last(): string[] {
    return [...this.lines];
  }

  /**
   * What an error appends: `; last output: ` and the last `count` lines, one line after the
   * other (as the container schedulers show them); empty when there is none.
   */
  note(count = this.size): string {
    const lines = this.lines.slice(-count);
    return lines.length === 0 ? '' : `; last output: ${lines.join('\n')}`;
  }
}
