import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real npm registry of one package, as a company's internal mirror would serve it: the
 * package document at `/<name>` and its tarball (made with `npm pack`), on every address of
 * this machine. `requests` counts what it was asked.
 */
export interface NpmMirror {
  /** `http://<address>:<port>/`, as NPM_CONFIG_REGISTRY takes it. */
  url: string;
  port: number;
  requests: string[];
  close(): Promise<void>;
}

function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout: 120_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout)));
  });
}

/** Serves the package `name`@1.0.0, whose index.js exports `exported`, at `address` (the mirror's URL names it). */
export async function startNpmMirror(address: string, name: string, exported: string): Promise<NpmMirror> {
  const work = await mkdtemp(join(tmpdir(), 'svc-npm-mirror-'));
  const source = join(work, 'package');
  await mkdir(source);
  await writeFile(join(source, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js', license: 'MIT' }));
  await writeFile(join(source, 'index.js'), `module.exports = ${JSON.stringify(exported)};\n`);
  const file = (await run('npm', ['pack', '--silent', '--pack-destination', work], source)).trim().split('\n').pop() ?? '';
  const tarball = await readFile(join(work, file));
  await rm(work, { recursive: true, force: true });
  const requests: string[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === `/${name}`) {
      const document = {
        name,
        'dist-tags': { latest: '1.0.0' },
        versions: {
          '1.0.0': {
            name,
            version: '1.0.0',
            main: 'index.js',
            dist: {
              tarball: `${base}${name}/-/${file}`,
              shasum: createHash('sha1').update(tarball).digest('hex'),
              integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
            },
          },
        },
      };
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(document));
    } else if (req.url === `/${name}/-/${file}`) {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': tarball.length });
      res.end(tarball);
    } else {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error":"not found"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const port = (server.address() as { port: number }).port;
  base = `http://${address}:${port}/`;
  return { url: base, port, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
