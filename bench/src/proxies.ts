/*
 * HAProxy and nginx from Debian's packages in front of the benchmark's app, configured from
 * the templates in bench/proxies/ (kept in the repository so that anyone can read what the
 * router is compared with), and what the benchmark reads of processes in /proc: CPU time and
 * resident memory of a process and its children.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { freePort } from './processes';

const TEMPLATES = resolve(__dirname, '..', 'proxies');

/** The two proxies the router is compared with. */
export type ProxyKind = 'haproxy' | 'nginx';

const BINARIES: Record<ProxyKind, string> = {
  haproxy: process.env.BENCH_HAPROXY ?? '/usr/sbin/haproxy',
  nginx: process.env.BENCH_NGINX ?? '/usr/sbin/nginx',
};

/** A proxy the benchmark started. */
export interface RunningProxy {
  kind: ProxyKind;
  port: number;
  tlsPort: number;
  /** Its processes: the master and its workers. */
  pids(): number[];
  stop(): Promise<void>;
}

/** What a template is filled with. */
export interface ProxySettings {
  appPort: number;
  host: string;
  workers: number;
  /** PEM files of the certificate and of its key. */
  cert: string;
  key: string;
}

/**
 * `text` with each `${NAME}` replaced by `values[NAME]`.
 * @throws Error naming a field the values lack, so that a template never runs half-filled.
 */
export function fillTemplate(text: string, values: Readonly<Record<string, string | number>>): string {
  return text.replace(/\$\{([A-Z_]+)\}/g, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`the template needs a value for \${${name}}`);
    return String(value);
  });
}

/** utime + stime of a process from the fields of /proc/<pid>/stat (after the command), in clock ticks. */
export function cpuTicksOf(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** CPU time (user and system) a process has used, in seconds; 0 when it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    return cpuTicksOf(readFileSync(`/proc/${pid}/stat`, 'utf8')) / 100;
  } catch {
    return 0;
  }
}

/** Resident memory of a process in MiB; NaN when it is gone. */
export function rssMiB(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The children of a process (a proxy's workers). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A process and its children. */
export function treeOf(pid: number | undefined): number[] {
  return pid === undefined ? [] : [pid, ...childrenOf(pid)];
}

/**
 * Installs a Debian package when its binary is missing (`apt-get install -y`, after
 * `apt-get update` when the first attempt fails). False when the binary is still missing.
 */
export function ensurePackage(name: string, binary: string, log: (line: string) => void): boolean {
  if (existsSync(binary)) return true;
  log(`${binary} is missing: apt-get install -y ${name}`);
  const install = (): boolean => spawnSync('apt-get', ['install', '-y', name], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update'], { stdio: 'ignore' });
    install();
  }
  if (existsSync(binary)) return true;
  log(`${name} could not be installed`);
  return false;
}

/** Installs Debian's package of the proxy when its binary is missing; false (the proxy is left out) when it is still missing. */
export function ensureInstalled(kind: ProxyKind, log: (line: string) => void): boolean {
  if (ensurePackage(kind, BINARIES[kind], log)) return true;
  log(`${kind} is left out`);
  return false;
}

/** Whether something answers HTTP on the port. */
export function answers(port: number, host?: string): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: host === undefined ? {} : { Host: host } }, (res) => {
      res.resume();
      resolveAnswer(true);
    });
    req.on('error', () => resolveAnswer(false));
    req.end();
  });
}

/** Polls `check` every 50 ms for at most 10 s. */
export async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`${what} did not come up`);
}

function stopper(child: ChildProcess): () => Promise<void> {
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await exited;
  };
}

/** Starts the proxy with its own files under `dir`; null (with a printed reason) when it cannot run. */
export async function startProxy(kind: ProxyKind, dir: string, settings: ProxySettings, log: (line: string) => void): Promise<RunningProxy | null> {
  if (!ensureInstalled(kind, log)) return null;
  const prefix = join(dir, kind);
  await mkdir(join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const tlsPort = await freePort();
  // HAProxy wants the certificate and its key in one file.
  const certAndKey = join(prefix, 'cert-and-key.pem');
  await writeFile(certAndKey, `${await readFile(settings.cert, 'utf8')}${await readFile(settings.key, 'utf8')}`);
  const values = {
    PREFIX: prefix,
    PORT: port,
    TLS_PORT: tlsPort,
    APP_PORT: settings.appPort,
    HOST: settings.host,
    WORKERS: settings.workers,
    CERT: settings.cert,
    KEY: settings.key,
    CERT_AND_KEY: certAndKey,
    // nginx's workers run as nobody unless told otherwise; the files here are root's.
    USER_LINE: process.getuid?.() === 0 ? 'user root;' : '',
  };
  const name = kind === 'nginx' ? 'nginx.conf' : 'haproxy.cfg';
  const config = join(prefix, name);
  await writeFile(config, fillTemplate(await readFile(join(TEMPLATES, `${name}.template`), 'utf8'), values));
  const args = kind === 'nginx' ? ['-p', prefix, '-c', config, '-e', join(prefix, 'error.log')] : ['-db', '-f', config];
  let output = '';
  const child = spawn(BINARIES[kind], args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const stop = stopper(child);
  try {
    await waitFor(() => answers(port, settings.host), kind);
  } catch {
    child.kill('SIGKILL');
    const errors = kind === 'nginx' ? await readFile(join(prefix, 'error.log'), 'utf8').catch(() => '') : '';
    log(`${kind} did not start: ${output}${errors}`);
    return null;
  }
  return { kind, port, tlsPort, pids: () => treeOf(child.pid), stop };
}
