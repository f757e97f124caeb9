import { open } from 'node:fs/promises';

const NEWLINE = 0x0a;

/**
 * The last `count` complete lines of a file (without their newlines), oldest first,
 * reading backwards from the end in chunks so that the cost follows the lines wanted,
 * not the size of the file. A trailing line without its newline is left out: it is a
 * write that did not finish. A missing file has no lines.
 */
export async function readLastLines(path: string, count: number, chunkBytes: number): Promise<string[]> {
  if (count <= 0) return [];
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  try {
    const { size } = await handle.stat();
    const chunks: Buffer[] = [];
    let position = size;
    let newlines = 0;
    // count + 1 newlines: the one ending each wanted line, plus the one just before the first.
    while (position > 0 && newlines <= count) {
      const length = Math.min(chunkBytes, position);
      position -= length;
      const chunk = Buffer.alloc(length);
      const { bytesRead } = await handle.read(chunk, 0, length, position);
      const data = chunk.subarray(0, bytesRead);
      chunks.unshift(data);
      newlines += countNewlines(data);
    }
    const lines = Buffer.concat(chunks).toString('utf8').split('\n');
    lines.pop();
    // When reading stopped before the start of the file, the first piece is a partial line
    // (perhaps cut inside a multi-byte character); having read count + 1 newlines, it is
    // never among the last `count` lines.
    return lines.slice(-count);
  } finally {
    await handle.close();
  }
}

function countNewlines(data: Buffer): number {
  let n = 0;
  for (let i = data.indexOf(NEWLINE); i !== -1; i = data.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** True for the error a file system call gives for a path that does not exist. */
export function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT';
}
