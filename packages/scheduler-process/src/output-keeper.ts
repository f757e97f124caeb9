import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { LineSplitter } from './output';

/** What one kept output file may grow to; the rest of the output is dropped. */
const KEPT_BYTES = 1024 * 1024;

/**
 * The keeper: reads the pipes it was given (descriptors 3 and up) and appends each to its
 * file (the arguments after the size limit), until every writer is gone.
 */
const KEEPER = `
const fs = require('fs');
const net = require('net');
const limit = Number(process.argv[1]);
process.argv.slice(2).forEach((file, i) => {
  const out = fs.openSync(file, 'a', 0o600);
  let written = 0;
  const pipe = new net.Socket({ fd: 3 + i, readable: true, writable: false });
  pipe.on('data', (chunk) => {
    if (written < limit) fs.writeSync(out, chunk.subarray(0, limit - written));
    written += chunk.length;
  });
  pipe.on('error', () => undefined);
  pipe.on('close', () => fs.closeSync(out));
});
`;

const fileName = (id: string, stream: number): string => `${id.replace(/[^A-Za-z0-9_.-]/g, '_')}.${stream === 0 ? 'stdout' : 'stderr'}`;

/**
 * Hands the output pipes of processes left running for the next controller process to a
 * small detached process that keeps reading them into files under `directory` (one a pipe,
 * capped) until the processes are gone. Without a reader, a process would die on its next
 * line (EPIPE, SIGPIPE) once this controller process exits. `importKeptOutput` reads the
 * files into the app's log when the next controller process stops those processes.
 */
export function keepOutput(directory: string, groups: Array<{ id: string; pipes: readonly Readable[] }>): void {
  const pipes: Readable[] = [];
  const files: string[] = [];
  for (const group of groups) {
    group.pipes.forEach((pipe, stream) => {
      pipes.push(pipe);
      files.push(join(directory, fileName(group.id, stream)));
    });
  }
  if (pipes.length === 0) return;
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  // What the pipes hold from now on is the keeper's to read.
  for (const pipe of pipes) pipe.pause();
  const keeper = spawn(process.execPath, ['-e', KEEPER, String(KEPT_BYTES), ...files], { detached: true, stdio: ['ignore', 'ignore', 'ignore', ...pipes] });
  keeper.on('error', () => undefined);
  keeper.unref();
  // The keeper has its own copies of the descriptors.
  for (const pipe of pipes) pipe.destroy();
}

/** Reads the output kept for the process of `id` (see keepOutput), line by line into `line`, and removes it. */
export function importKeptOutput(directory: string, id: string, line: (text: string) => void): void {
  for (const stream of [0, 1]) {
    const file = join(directory, fileName(id, stream));
    if (!existsSync(file)) continue;
    try {
      const lines = new LineSplitter();
      lines.push(readFileSync(file)).forEach(line);
      lines.end().forEach(line);
    } finally {
      rmSync(file, { force: true });
    }
  }
}
