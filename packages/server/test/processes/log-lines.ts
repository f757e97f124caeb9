import type { ChildProcess } from 'node:child_process';

const KEEP_OUTPUT_CHARS = 20_000;

/**
 * Watches a started process of the platform (a controller, a router): keeps the last of what
 * it writes, for failure messages, and resolves `ready` with what `found` makes of the first
 * JSON log line it accepts (its "listening" line). `ready` rejects, with the output, when the
 * process exits first or does not get there within `startTimeoutMs` (then it is killed).
 */
export function watchStart<T>(child: ChildProcess, what: string, startTimeoutMs: number, found: (record: Record<string, unknown>) => T | null): { output: () => string; ready: Promise<T> } {
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-KEEP_OUTPUT_CHARS);
  };
  child.stderr?.on('data', keep);
  const ready = new Promise<T>((resolve, reject) => {
    let settled = false;
    let buffered = '';
    const fail = (reason: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${reason}\n--- ${what} output ---\n${output}`));
    };
    const timer = setTimeout(() => fail(`The ${what} did not listen within ${startTimeoutMs} ms`), startTimeoutMs);
    child.once('exit', (code, signal) => fail(`The ${what} exited before listening (code ${code}, signal ${signal})`));
    child.stdout?.on('data', (chunk: Buffer) => {
      keep(chunk);
      if (settled) return;
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        let record: Record<string, unknown>;
        try {
          record = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        const value = found(record);
        if (value === null) continue;
        settled = true;
        clearTimeout(timer);
        resolve(value);
        return;
      }
    });
  });
  return { output: () => output, ready };
}
