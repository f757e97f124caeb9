import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { npmCalls, removeTools, runStep, shellsToTest, type Shell } from './support/buildpack-run';

/*
 * The built-in static site buildpack (buildpacks/static): an index.html at the root or in
 * public/ is served by the stack's static file server, which the compile step puts in the
 * build; nothing of the app runs. The server is then run as the web process would be, and
 * asked for what a browser, a cache and an attacker ask.
 */

describe.each(shellsToTest())('the static site buildpack under %s', (shell: Shell) => {
  let root: string;
  let calls: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-static-'));
    calls = join(root, 'npm-calls');
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  afterAll(removeTools);

  it('detects an index.html at the root or in public/, and nothing else', async () => {
    const atRoot = join(root, 'a');
    const inPublic = join(root, 'b', 'public');
    const neither = join(root, 'c', 'docs');
    for (const dir of [atRoot, inPublic, neither]) await mkdir(dir, { recursive: true });
    await writeFile(join(atRoot, 'index.html'), '<h1>a</h1>\n');
    await writeFile(join(inPublic, 'index.html'), '<h1>b</h1>\n');
    await writeFile(join(neither, 'index.html'), '<h1>c</h1>\n');

    expect(await runStep(shell, 'static', 'detect', [atRoot], calls)).toEqual({ code: 0, output: 'Static site\n' });
    expect(await runStep(shell, 'static', 'detect', [join(root, 'b')], calls)).toEqual({ code: 0, output: 'Static site\n' });
    expect((await runStep(shell, 'static', 'detect', [join(root, 'c')], calls)).code).toBe(1);
    expect((await runStep(shell, 'static', 'detect', [join(atRoot, 'index.html')], calls)).code).toBe(1);
  });

  it('compiles by adding the server alone, running nothing of the app, and releases web as that server of public/ or the root', async () => {
    const build = join(root, 'build');
    await mkdir(join(build, 'public'), { recursive: true });
    await writeFile(join(build, 'public', 'index.html'), '<h1>hi</h1>\n');
    // A package.json with an install script the Node.js buildpack would run: this one must not.
    await writeFile(join(build, 'package.json'), JSON.stringify({ scripts: { postinstall: 'touch ran' } }));

    const compiled = await runStep(shell, 'static', 'compile', [build, join(root, 'cache'), join(root, 'env')], calls);

    expect(compiled).toEqual({ code: 0, output: expect.stringContaining('-----> Static site detected: serving public/') });
    expect((await readdir(build)).sort()).toEqual(['.svc', 'package.json', 'public']);
    expect(await readdir(join(build, '.svc'))).toEqual(['static-server.js']);
    expect(await npmCalls(calls)).toEqual([]);
    expect(await runStep(shell, 'static', 'release', [build], calls)).toEqual({ code: 0, output: '---\ndefault_process_types:\n  web: node .svc/static-server.js public\n' });

    await rm(join(build, 'public'), { recursive: true });
    await writeFile(join(build, 'index.html'), '<h1>root</h1>\n');
    expect((await runStep(shell, 'static', 'compile', [build, join(root, 'cache'), join(root, 'env')], calls)).output).toContain("serving the app's root");
    expect((await runStep(shell, 'static', 'release', [build], calls)).output).toBe('---\ndefault_process_types:\n  web: node .svc/static-server.js .\n');
  });
});

/** A port nobody listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

describe('the static site server, run as the web process', () => {
  let root: string;
  let build: string;
  let server: ChildProcess;
  let base: string;

  const get = async (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> => {
    const res = await fetch(`${base}${path}`, { method, headers });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-static-serve-'));
    build = join(root, 'build');
    await mkdir(join(build, 'public', 'docs'), { recursive: true });
    await mkdir(join(build, 'public', '.well-hidden'), { recursive: true });
    await writeFile(join(build, 'public', 'index.html'), '<h1>home</h1>\n');
    await writeFile(join(build, 'public', 'style.css'), 'h1 { color: teal }\n');
    await writeFile(join(build, 'public', 'app.3f9a1c2b.js'), 'console.log(1);\n');
    await writeFile(join(build, 'public', 'docs', 'index.html'), '<h1>docs</h1>\n');
    await writeFile(join(build, 'public', '404.html'), '<h1>lost</h1>\n');
    await writeFile(join(build, 'public', '.env'), 'SECRET=1\n');
    await writeFile(join(build, 'public', '.well-hidden', 'x.txt'), 'hidden\n');
    await writeFile(join(build, 'secret.txt'), 'outside the site\n');
    await symlink(join(build, 'secret.txt'), join(build, 'public', 'leak.txt'));
    await symlink('/etc', join(build, 'public', 'etc'));
    const compiled = await runStep('sh', 'static', 'compile', [build, join(root, 'cache'), join(root, 'env')], join(root, 'npm-calls'));
    expect(compiled.code).toBe(0);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, ['.svc/static-server.js', 'public'], { cwd: build, env: { PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      server.stdout?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes(`on port ${port}`)) resolve();
      });
      server.on('exit', (code) => reject(new Error(`the static server exited (${code}): ${seen}`)));
    });
  });

  afterAll(async () => {
    if (server !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await rm(root, { recursive: true, force: true });
  });

  it('serves the index, directories by their index.html, and files with their type', async () => {
    const home = await get('/');
    expect([home.status, home.text, home.headers.get('content-type')]).toEqual([200, '<h1>home</h1>\n', 'text/html; charset=utf-8']);
    expect((await get('/docs/')).text).toBe('<h1>docs</h1>\n');
    expect((await get('/docs')).text).toBe('<h1>docs</h1>\n');
    const css = await get('/style.css?v=2');
    expect([css.status, css.text, css.headers.get('content-type'), css.headers.get('x-content-type-options')]).toEqual([200, 'h1 { color: teal }\n', 'text/css; charset=utf-8', 'nosniff']);
    const head = await get('/style.css', {}, 'HEAD');
    expect([head.status, head.text, head.headers.get('content-length')]).toEqual([200, '', String('h1 { color: teal }\n'.length)]);
  });

  it('gives caching headers: HTML revalidated, assets kept, hashed names kept for a year; a matching ETag or date answers 304', async () => {
    const home = await get('/');
    expect(home.headers.get('cache-control')).toBe('no-cache');
    const css = await get('/style.css');
    expect(css.headers.get('cache-control')).toBe('public, max-age=3600');
    expect((await get('/app.3f9a1c2b.js')).headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const etag = css.headers.get('etag') ?? '';
    expect(etag).toMatch(/^W\/"[0-9a-f]+-[0-9a-f]+"$/);
    const again = await get('/style.css', { 'If-None-Match': etag });
    expect([again.status, again.text, again.headers.get('etag')]).toEqual([304, '', etag]);
    expect((await get('/style.css', { 'If-None-Match': 'W/"other"' })).status).toBe(200);
    expect((await get('/style.css', { 'If-Modified-Since': css.headers.get('last-modified') ?? '' })).status).toBe(304);
    expect((await get('/style.css', { 'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status).toBe(200);
  });

  it("answers a missing path with the site's 404.html and 404", async () => {
    const missing = await get('/nothing/here.html');
    expect([missing.status, missing.text]).toEqual([404, '<h1>lost</h1>\n']);
  });

  it('serves nothing outside the site, no dot-name, and no symbolic link that leads out', async () => {
    for (const path of ['/../secret.txt', '/%2e%2e/secret.txt', '/docs/%2E%2E/%2E%2E/secret.txt', '/..%2fsecret.txt', '/.env', '/.well-hidden/x.txt', '/%2eenv', '/leak.txt', '/etc/passwd', '/etc/hostname', '/style.css%00.html', '/%E0%A4%A', '/..\\secret.txt']) {
      const answer = await get(path);
      expect({ path, status: answer.status, text: answer.text }).toEqual({ path, status: 404, text: '<h1>lost</h1>\n' });
    }
  });

  it('answers only GET and HEAD', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const answer = await get('/', {}, method);
      expect([answer.status, answer.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    }
  });
});
