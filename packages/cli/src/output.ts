import { createInterface } from 'node:readline';

/** Where a command writes: stdout for results, stderr for progress and messages. */
export interface Io {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
  in: NodeJS.ReadableStream & { isTTY?: boolean };
}

export const processIo: Io = { out: process.stdout, err: process.stderr, in: process.stdin };

/**
 * Ends the process quietly (exit 0) when the reader of `stream` goes away, as `svc releases |
 * head -3` does after three lines: the write fails with EPIPE, and there is nobody left to
 * tell. Any other error of the stream is thrown as before. For the entry points only.
 */
export function exitQuietlyOnClosedPipe(stream: NodeJS.EventEmitter, exit: (code: number) => void = (code) => process.exit(code)): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    exit(0);
  });
}

/** Writes lines to stdout. */
export function print(io: Io, ...lines: string[]): void {
  for (const line of lines) io.out.write(`${line}\n`);
}

/** Writes a value as indented JSON (the `--json` output). */
export function printJson(io: Io, value: unknown): void {
  io.out.write(`${JSON.stringify(value, null, 2)}\n`);
}

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
};

/** Prints rows as plain columns padded to their widest cell, under upper-case headers. */
export function printTable(io: Io, columns: readonly string[], rows: readonly (readonly unknown[])[], empty = 'none'): void {
  if (rows.length === 0) {
    print(io, `(${empty})`);
    return;
  }
  const text = [columns.map((c) => c.toUpperCase()), ...rows.map((row) => row.map(cell))];
  const widths = columns.map((_, i) => Math.max(...text.map((row) => (row[i] ?? '').length)));
  for (const row of text) {
    print(io, row.map((value, i) => (i === row.length - 1 ? value : value.padEnd(widths[i] ?? 0))).join('  ').trimEnd());
  }
}

/** Prints `key: value` lines with aligned values. */
export function printFields(io: Io, fields: readonly (readonly [string, unknown])[]): void {
  const width = Math.max(...fields.map(([key]) => key.length));
  for (const [key, value] of fields) print(io, `${`${key}:`.padEnd(width + 1)} ${cell(value)}`);
}

const FRAMES = ['|', '/', '-', '\\'];

/**
 * Shows that a long operation is under way: a turning line on stderr when stderr is a
 * terminal, nothing otherwise (scripts read stdout and exit codes).
 */
export async function withProgress<T>(io: Io, label: string, work: () => Promise<T>): Promise<T> {
  if (!io.err.isTTY) return work();
  let frame = 0;
  const draw = (): void => {
    io.err.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}...`);
  };
  draw();
  const timer = setInterval(draw, 120);
  try {
    const result = await work();
    io.err.write(`\r${label}... done\n`);
    return result;
  } catch (error) {
    io.err.write(`\r${label}... failed\n`);
    throw error;
  } finally {
    clearInterval(timer);
  }
}

/** Asks a question on the terminal; a hidden answer is not echoed (passwords). */
export function prompt(io: Io, question: string, hidden = false): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: io.in, output: io.err, terminal: io.in.isTTY === true });
    if (hidden) {
      // The question is written once; what is typed after it is not echoed.
      const output = rl as unknown as { _writeToOutput?: (s: string) => void };
      let muted = false;
      output._writeToOutput = (s: string) => {
        if (!muted) io.err.write(s);
      };
      rl.question(question, (answer) => {
        rl.close();
        io.err.write('\n');
        resolve(answer);
      });
      muted = true;
      return;
    }
    rl.question(question, (answer) => {
      rl.close();
      resolve(answer);
    });
  });
}
