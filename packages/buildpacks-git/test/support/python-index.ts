import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real Python package index (PEP 503, the "simple" API pip reads) of one pure-Python
 * package, as a company's internal index would serve it: `/simple/<name>/` links the wheel,
 * which this machine's python3 writes with its standard library (a wheel is a zip file with
 * its metadata). `requests` counts what pip asked.
 */
export interface PythonIndex {
  /** `http://<address>:<port>/simple/`, as PIP_INDEX_URL takes it. */
  url: string;
  port: number;
  requests: string[];
  close(): Promise<void>;
}

/** The host's Python 3, which the process scheduler's sandbox runs (Debian's, with venv). */
export const HOST_PYTHON = '/usr/bin/python3';

/** The script that writes a wheel (make-wheel.py beside this file). */
export const MAKE_WHEEL = join(__dirname, 'make-wheel.py');

function python(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(HOST_PYTHON, args, { timeout: 30_000 }, (error, _stdout, stderr) => (error ? reject(new Error(`${HOST_PYTHON}: ${error.message}\n${stderr}`)) : resolve()));
  });
}

/** Serves the package `project` 1.0.0 (module `project` with `-` as `_`, exporting GREETING) on `address`. */
export async function startPythonIndex(address: string, project: string, greeting: string): Promise<PythonIndex> {
  const work = await mkdtemp(join(tmpdir(), 'svc-python-index-'));
  const wheelName = `${project.replace(/-/g, '_')}-1.0.0-py3-none-any.whl`;
  await python([MAKE_WHEEL, join(work, wheelName), project, greeting]);
  const wheel = await readFile(join(work, wheelName));
  await rm(work, { recursive: true, force: true });
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '';
    requests.push(path);
    if (path === `/simple/${project}/`) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!DOCTYPE html><html><body><a href="/files/${wheelName}">${wheelName}</a></body></html>\n`);
    } else if (path === `/files/${wheelName}`) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': wheel.length });
      res.end(wheel);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, address, resolve);
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://${address}:${port}/simple/`,
    port,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
