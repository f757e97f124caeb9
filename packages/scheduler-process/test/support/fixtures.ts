import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerSpec, RunSpec } from '@svc/core';

/**
 * A small web application: answers on PORT, tells its environment, pid and working directory,
 * grows its memory on request, and prints a line when it listens.
 */
const APP_JS = `
const http = require('http');
const hog = [];
const server = http.createServer((req, res) => {
  if (req.url === '/env') return res.end(JSON.stringify(process.env));
  if (req.url === '/pid') return res.end(String(process.pid));
  if (req.url === '/cwd') return res.end(process.cwd());
  if (req.url === '/health') { res.statusCode = process.env.HEALTHY === 'yes' ? 200 : 500; return res.end(); }
  if (req.url === '/grow') {
    // At most 384 MiB, so that a scheduler that failed to stop it could not exhaust the machine.
    const timer = setInterval(() => (hog.length < 24 ? hog.push(Buffer.alloc(16 * 1024 * 1024, 1)) : clearInterval(timer)), 20);
    return res.end('growing');
  }
  res.end('hello from ' + process.env.SVC_APP);
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(0); });
`;

/** A directory holding app.js, removed by `remove`. */
export interface AppDirectory {
  path: string;
  remove(): Promise<void>;
}

/** A fresh temporary directory with the test application in it. */
export async function appDirectory(): Promise<AppDirectory> {
  const path = await mkdtemp(join(tmpdir(), 'svc-process-'));
  await writeFile(join(path, 'app.js'), APP_JS);
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** The command that runs the test application (node by its absolute path: PATH may be minimal). */
export function nodeApp(appDir: string): string {
  return `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(appDir, 'app.js'))}`;
}

let ids = 0;

/** A container spec for app `myapp`, release 2, with the given overrides. */
export function aSpec(overrides: Partial<ContainerSpec> = {}): ContainerSpec {
  ids++;
  return {
    id: `00000000-0000-4000-8000-${String(ids).padStart(12, '0')}`,
    app: 'myapp',
    type: 'web',
    num: 1,
    release: 2,
    image: 'example/myapp:v1',
    command: 'true',
    workdir: null,
    env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2' },
    memory: null,
    cpu: null,
    ...overrides,
  };
}

/** A one-off command spec for `myapp` with the given overrides. */
export function aRun(command: string, overrides: Partial<RunSpec> = {}): RunSpec {
  return {
    app: 'myapp',
    release: 2,
    image: 'example/myapp:v1',
    workdir: null,
    command,
    env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2' },
    timeoutSeconds: 60,
    outputLimitBytes: 1024 * 1024,
    ...overrides,
  };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value other than undefined/false, or fails after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, ms = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await pause(50);
  }
}

/** Whether a process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The body of a GET, failing on anything but 200. */
export async function fetchText(url: string): Promise<string> {
  const res = await fetch(url, { headers: { connection: 'close' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text}`);
  return text;
}
