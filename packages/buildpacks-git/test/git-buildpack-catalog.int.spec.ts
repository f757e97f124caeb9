import { execFileSync } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestRejected } from '@svc/core';
import { BUILTIN_BUILDPACKS_DIR, GitBuildpackCatalog } from '@svc/buildpacks-git';

/*
 * The catalog against real directories and real git repositories made in a temporary
 * directory and fetched over file:// URLs.
 */

const SCRIPT = '#!/bin/sh\necho "$0"\n';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1' },
  }).trim();
}

async function writeBuildpack(directory: string, marker: string, mode = 0o755): Promise<void> {
  await mkdir(join(directory, 'bin'), { recursive: true });
  for (const script of ['detect', 'compile', 'release']) {
    await writeFile(join(directory, 'bin', script), `${SCRIPT}# ${marker}\n`);
    await chmod(join(directory, 'bin', script), mode);
  }
}

function collect(): { lines: string[]; output: (line: string) => void } {
  const lines: string[] = [];
  return { lines, output: (line) => lines.push(line) };
}

async function rejection(promise: Promise<unknown>): Promise<RequestRejected> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RequestRejected) return error;
    throw error;
  }
  throw new Error('expected a RequestRejected, the promise resolved');
}

describe('GitBuildpackCatalog', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-buildpacks-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  describe('installed', () => {
    it('lists the built-ins of the repository in order, node then plain', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir: join(root, 'fetched') });

      expect(await catalog.installed()).toEqual([
        { name: 'node', directory: join(BUILTIN_BUILDPACKS_DIR, 'node'), needs: 'a package.json' },
        { name: 'python', directory: join(BUILTIN_BUILDPACKS_DIR, 'python'), needs: 'a requirements.txt or a pyproject.toml' },
        { name: 'go', directory: join(BUILTIN_BUILDPACKS_DIR, 'go'), needs: 'a go.mod' },
        { name: 'ruby', directory: join(BUILTIN_BUILDPACKS_DIR, 'ruby'), needs: 'a Gemfile' },
        { name: 'static', directory: join(BUILTIN_BUILDPACKS_DIR, 'static'), needs: 'an index.html at its root or in public/' },
        { name: 'plain', directory: join(BUILTIN_BUILDPACKS_DIR, 'plain'), needs: null },
      ]);
    });

    it('lists the operator\'s buildpacks sorted before the built-ins, skipping what is no buildpack or has an unsafe name', async () => {
      const operator = join(root, 'operator');
      await writeBuildpack(join(operator, 'ruby'), 'ruby');
      await writeBuildpack(join(operator, 'Go-1.22'), 'go');
      await writeBuildpack(join(operator, 'elixir'), 'elixir');
      await writeBuildpack(join(operator, 'not-executable'), 'x', 0o644);
      await writeBuildpack(join(operator, '.hidden'), 'hidden');
      await mkdir(join(operator, 'empty'));
      await writeFile(join(operator, 'a-file'), 'x');
      // A link as bin/compile is refused: the scripts must be regular files.
      await writeBuildpack(join(operator, 'linked'), 'linked');
      await rm(join(operator, 'linked', 'bin', 'compile'));
      await symlink('/bin/sh', join(operator, 'linked', 'bin', 'compile'));

      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, operatorDir: operator, fetchDir: join(root, 'f') });

      expect((await catalog.installed()).map((pack) => pack.name)).toEqual(['Go-1.22', 'elixir', 'node', 'python', 'go', 'ruby', 'static', 'plain']);
      // The operator's ruby takes the built-in ruby's place.
      expect((await catalog.installed())[5]).toEqual({ name: 'ruby', directory: join(operator, 'ruby') });
    });

    it('puts an operator\'s buildpack named like a built-in in the built-in\'s place, plain still last', async () => {
      const operator = join(root, 'operator');
      await writeBuildpack(join(operator, 'plain'), 'own plain');
      await writeBuildpack(join(operator, 'zig'), 'zig');
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, operatorDir: operator, fetchDir: join(root, 'f') });

      expect(await catalog.installed()).toEqual([
        { name: 'zig', directory: join(operator, 'zig') },
        { name: 'node', directory: join(BUILTIN_BUILDPACKS_DIR, 'node'), needs: 'a package.json' },
        { name: 'python', directory: join(BUILTIN_BUILDPACKS_DIR, 'python'), needs: 'a requirements.txt or a pyproject.toml' },
        { name: 'go', directory: join(BUILTIN_BUILDPACKS_DIR, 'go'), needs: 'a go.mod' },
        { name: 'ruby', directory: join(BUILTIN_BUILDPACKS_DIR, 'ruby'), needs: 'a Gemfile' },
        { name: 'static', directory: join(BUILTIN_BUILDPACKS_DIR, 'static'), needs: 'an index.html at its root or in public/' },
        { name: 'plain', directory: join(operator, 'plain') },
      ]);
    });

    it('lists only the built-ins when the operator\'s directory does not exist', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, operatorDir: join(root, 'missing'), fetchDir: join(root, 'f') });

      expect((await catalog.installed()).map((pack) => pack.name)).toEqual(['node', 'python', 'go', 'ruby', 'static', 'plain']);
    });
  });

  describe('fetch', () => {
    let repo: string;
    let url: string;
    let firstCommit: string;
    let fetchDir: string;

    beforeEach(async () => {
      repo = join(root, 'repo');
      url = `file://${repo}`;
      fetchDir = join(root, 'fetched');
      await mkdir(repo);
      git(repo, 'init', '--quiet');
      await writeBuildpack(repo, 'v1');
      git(repo, 'add', '.');
      git(repo, 'commit', '--quiet', '-m', 'v1');
      firstCommit = git(repo, 'rev-parse', 'HEAD');
      git(repo, 'tag', 'v1.0');
      git(repo, 'checkout', '--quiet', '-b', 'next');
      await writeBuildpack(repo, 'next');
      git(repo, 'commit', '--quiet', '-am', 'next');
      git(repo, 'checkout', '--quiet', 'main');
      await writeBuildpack(repo, 'v2');
      git(repo, 'commit', '--quiet', '-am', 'v2');
    });

    async function marker(directory: string): Promise<string> {
      return (await readFile(join(directory, 'bin', 'compile'), 'utf8')).split('# ')[1]?.trim() ?? '';
    }

    it('fetches the remote\'s HEAD without a ref, as a work tree without .git, its scripts executable', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });
      const { lines, output } = collect();

      const pack = await catalog.fetch(url, null, output);

      expect(pack.name).toBe(url);
      expect(await marker(pack.directory)).toBe('v2');
      expect((await readdir(pack.directory)).sort()).toEqual(['bin']);
      expect(execFileSync(join(pack.directory, 'bin', 'detect'), { encoding: 'utf8' }).trim()).toBe(join(pack.directory, 'bin', 'detect'));
      expect(lines[0]).toBe(`-----> Fetching buildpack ${url}`);
      expect(lines[1]).toMatch(/^ {7}at commit [0-9a-f]{40}$/);
    });

    it('fetches a branch, a tag and a commit, each into a directory of its own', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });

      const branch = await catalog.fetch(url, 'next', () => undefined);
      const tag = await catalog.fetch(url, 'v1.0', () => undefined);
      const commit = await catalog.fetch(url, firstCommit, () => undefined);
      const short = await catalog.fetch(url, firstCommit.slice(0, 10), () => undefined);

      expect(branch.name).toBe(`${url}#next`);
      expect(await marker(branch.directory)).toBe('next');
      expect(await marker(tag.directory)).toBe('v1');
      expect(await marker(commit.directory)).toBe('v1');
      expect(await marker(short.directory)).toBe('v1');
      expect(new Set([branch.directory, tag.directory, commit.directory, short.directory]).size).toBe(4);
      // Nothing else left in the fetch directory: no staging copy, no temporary HOME.
      expect((await readdir(fetchDir)).length).toBe(4);
    });

    it('reuses an earlier fetch of the same URL and ref without running git', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });
      const first = await catalog.fetch(url, 'main', () => undefined);
      // The remote moves on and then disappears: the kept fetch answers.
      await writeBuildpack(repo, 'v3');
      git(repo, 'commit', '--quiet', '-am', 'v3');
      await rm(repo, { recursive: true, force: true });
      const { lines, output } = collect();

      const again = await new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir }).fetch(url, 'main', output);

      expect(again).toEqual(first);
      expect(await marker(again.directory)).toBe('v2');
      expect(lines).toEqual([`-----> Using buildpack ${url}#main (fetched before)`]);
    });

    it('answers two fetches of the same buildpack at once with one directory', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });

      const [one, two] = await Promise.all([catalog.fetch(url, 'v1.0', () => undefined), catalog.fetch(url, 'v1.0', () => undefined)]);

      expect(one).toEqual(two);
      expect(await marker(one.directory)).toBe('v1');
      expect(await readdir(fetchDir)).toHaveLength(1);
    });

    it('removes what an interrupted fetch left once it is older than twice the time limit, and nothing newer', async () => {
      await mkdir(join(fetchDir, '.fetch-0123456789abcdef', 'bin'), { recursive: true });
      await mkdir(join(fetchDir, '.home-old'), { recursive: true });
      await mkdir(join(fetchDir, '.fetch-fedcba9876543210'), { recursive: true });
      const old = new Date(Date.now() - 3 * 60_000);
      await utimes(join(fetchDir, '.fetch-0123456789abcdef'), old, old);
      await utimes(join(fetchDir, '.home-old'), old, old);
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir, timeoutMs: 60_000 });

      const pack = await catalog.fetch(url, null, () => undefined);

      expect((await readdir(fetchDir)).sort()).toEqual(['.fetch-fedcba9876543210', pack.directory.slice(fetchDir.length + 1)]);
    });

    it('refuses a repository without the bin scripts, and keeps nothing of it', async () => {
      const plain = join(root, 'not-a-buildpack');
      await mkdir(plain);
      git(plain, 'init', '--quiet');
      await writeFile(join(plain, 'README'), 'hello\n');
      git(plain, 'add', '.');
      git(plain, 'commit', '--quiet', '-m', 'readme');
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });

      const error = await rejection(catalog.fetch(`file://${plain}`, null, () => undefined));

      expect(error.code).toBe('BUILD.BUILDPACK_FETCH');
      expect(error.message).toContain('it is no buildpack');
      expect(await readdir(fetchDir)).toEqual([]);
    });

    it('refuses a missing repository, a missing ref and a ref that reads as an option', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });

      const missing = await rejection(catalog.fetch(`file://${join(root, 'nowhere')}`, null, () => undefined));
      const badRef = await rejection(catalog.fetch(url, 'no-such-branch', () => undefined));
      const badCommit = await rejection(catalog.fetch(url, 'deadbeefdeadbeef', () => undefined));
      const option = await rejection(catalog.fetch(url, '--upload-pack=touch /tmp/x', () => undefined));
      const optionUrl = await rejection(catalog.fetch('--upload-pack=touch', null, () => undefined));

      for (const error of [missing, badRef, badCommit, option, optionUrl]) expect(error.code).toBe('BUILD.BUILDPACK_FETCH');
      expect(missing.message).toMatch(/could not be fetched: .*(does not appear to be a git repository|not found|No such file)/i);
      expect(badRef.message).toContain('no-such-branch');
      expect(option.message).toContain('is not a branch, tag or commit name');
      expect(await readdir(fetchDir)).toEqual([]);
    });

    it('checks symbolic links out as plain files, so a fetched buildpack cannot point at the host\'s files', async () => {
      await mkdir(join(repo, 'lib'));
      await symlink('/etc/passwd', join(repo, 'lib', 'passwd'));
      git(repo, 'add', '.');
      git(repo, 'commit', '--quiet', '-m', 'link');
      const linkedScript = join(root, 'linked-script');
      await mkdir(linkedScript);
      git(linkedScript, 'init', '--quiet');
      await writeBuildpack(linkedScript, 'x');
      await rm(join(linkedScript, 'bin', 'compile'));
      await symlink('/bin/sh', join(linkedScript, 'bin', 'compile'));
      git(linkedScript, 'add', '.');
      git(linkedScript, 'commit', '--quiet', '-m', 'linked compile');
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });

      const pack = await catalog.fetch(url, null, () => undefined);
      const refused = await rejection(catalog.fetch(`file://${linkedScript}`, null, () => undefined));

      const link = join(pack.directory, 'lib', 'passwd');
      expect((await lstat(link)).isFile()).toBe(true);
      expect(await readFile(link, 'utf8')).toBe('/etc/passwd');
      expect(refused.message).toContain('it is no buildpack');
    });

    it('does not fetch submodules', async () => {
      const other = join(root, 'other');
      await mkdir(other);
      git(other, 'init', '--quiet');
      await writeFile(join(other, 'secret'), 'from the submodule\n');
      git(other, 'add', '.');
      git(other, 'commit', '--quiet', '-m', 'other');
      git(repo, '-c', 'protocol.file.allow=always', 'submodule', '--quiet', 'add', `file://${other}`, 'vendor/other');
      git(repo, 'commit', '--quiet', '-m', 'submodule');
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });

      const pack = await catalog.fetch(url, null, () => undefined);

      expect(await readdir(join(pack.directory, 'vendor', 'other'))).toEqual([]);
      expect(await marker(pack.directory)).toBe('v2');
    });

    it('refuses transports that run commands, such as ext::', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir });
      const proof = join(root, 'ext-ran');

      const error = await rejection(catalog.fetch(`ext::sh -c touch% ${proof}`, null, () => undefined));
      const plainExt = await rejection(catalog.fetch(`ext::touch:${proof}`, null, () => undefined));

      expect(error.code).toBe('BUILD.BUILDPACK_FETCH');
      expect(plainExt.message).toMatch(/transport 'ext' not allowed|not allowed/);
      await expect(readFile(proof)).rejects.toThrow();
    });

    it('refuses a buildpack larger than the size bound, and keeps nothing of it', async () => {
      await writeFile(join(repo, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
      git(repo, 'add', '.');
      git(repo, 'commit', '--quiet', '-m', 'big');
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir, sizeLimitBytes: 1024 * 1024 });

      const error = await rejection(catalog.fetch(url, null, () => undefined));

      expect(error.message).toContain('larger than 1 MiB');
      expect(await readdir(fetchDir)).toEqual([]);
    });

    it('stops a fetch that passes its time limit, and keeps nothing of it', async () => {
      // A server that accepts the connection and never answers.
      const sockets: Socket[] = [];
      const server = createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      try {
        const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir, timeoutMs: 1500 });
        const started = Date.now();

        const error = await rejection(catalog.fetch(`http://127.0.0.1:${port}/buildpack.git`, null, () => undefined));

        expect(error.message).toContain('git did not finish within 2 s');
        expect(Date.now() - started).toBeLessThan(10_000);
        expect(await readdir(fetchDir)).toEqual([]);
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('hides a password in the URL from what it prints', async () => {
      const catalog = new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, fetchDir, timeoutMs: 10_000 });
      const { lines, output } = collect();

      const error = await rejection(catalog.fetch('http://user:s3cret@127.0.0.1:9/buildpack.git', null, output));

      expect(error.code).toBe('BUILD.BUILDPACK_FETCH');
      expect([...lines, error.message].join('\n')).not.toContain('s3cret');
      expect(lines[0]).toBe('-----> Fetching buildpack http://***@127.0.0.1:9/buildpack.git');
    });
  });
});
