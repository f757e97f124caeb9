import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { EXIT, reasonOf } from '../src/errors';
import { assignments, formatDotenv, parseDotenv } from '../src/dotenv';
import { exitQuietlyOnClosedPipe, printTable, withProgress, type Io } from '../src/output';
import { clientFilePath, resolveSession, updateProfile } from '../src/profile';
import { appOfCheckout, appUrlOf, gitUrlOf } from '../src/context';
import { scaledSummary } from '../src/commands/ps';

function capture(tty: boolean): { io: Io; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void, isTTY: boolean) =>
    Object.assign(
      new Writable({
        write(chunk: Buffer, _e, done) {
          append(chunk.toString());
          done();
        },
      }),
      { isTTY },
    );
  return { io: { out: sink((s) => (out += s), false), err: sink((s) => (err += s), tty), in: new PassThrough() }, out: () => out, err: () => err };
}

describe('the server\'s reason in one line', () => {
  it.each([
    [400, { detail: 'No build associated with this release' }, 'No build associated with this release'],
    [400, 'No build associated with this release', 'No build associated with this release'],
    [400, { id: ['App IDs can only contain [a-z0-9-]'], non_field_errors: ['Bad.'] }, 'id: App IDs can only contain [a-z0-9-]; Bad.'],
    [502, '', 'the server answered 502'],
  ])('%s %j → %s', (status, body, reason) => {
    expect(reasonOf(status, body, typeof body === 'string' ? body : JSON.stringify(body))).toBe(reason);
  });

  it('documents distinct exit codes', () => {
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length);
  });
});

describe('.env files', () => {
  it('round-trips values that need quoting', () => {
    const values = { A: 'plain', B: 'with space', C: 'quote " and \\ backslash', D: 'line\nbreak', E: '$HOME', F: '' };
    expect(parseDotenv(formatDotenv(values))).toEqual(values);
  });

  it('reads comments, export, single quotes and trailing comments', () => {
    expect(parseDotenv("# c\n\nexport A=1\nB='x # y'\nC=z # note\r\n")).toEqual({ A: '1', B: 'x # y', C: 'z' });
  });

  it('names the line that is not a variable', () => {
    expect(() => parseDotenv('A=1\nnot a variable\n')).toThrow('line 2');
  });

  it('splits KEY=VALUE arguments at the first =', () => {
    expect(assignments(['URL=postgres://h/db?a=b'])).toEqual({ URL: 'postgres://h/db?a=b' });
    expect(() => assignments(['NOVALUE'])).toThrow('expected KEY=VALUE');
  });
});

describe('output', () => {
  it('pads columns under upper-case headers', () => {
    const c = capture(false);
    printTable(c.io, ['app', 'owner'], [['hello', 'alice'], ['a', 'bob']]);
    expect(c.out()).toBe('APP    OWNER\nhello  alice\na      bob\n');
  });

  it('shows progress on stderr only when it is a terminal', async () => {
    const tty = capture(true);
    expect(await withProgress(tty.io, 'Scaling', async () => 42)).toBe(42);
    expect(tty.err()).toContain('Scaling... done\n');
    const piped = capture(false);
    await withProgress(piped.io, 'Scaling', async () => 1);
    expect(piped.err()).toBe('');
    await expect(withProgress(tty.io, 'Failing', async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(tty.err()).toContain('Failing... failed\n');
  });
});

describe('profiles', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-client-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lives in ~/.svc/client.json, or under XDG_CONFIG_HOME, or where SVC_CONFIG says', () => {
    expect(clientFilePath({ HOME: '/home/a' })).toBe('/home/a/.svc/client.json');
    expect(clientFilePath({ HOME: '/home/a', XDG_CONFIG_HOME: '/x' })).toBe('/x/svc/client.json');
    expect(clientFilePath({ SVC_CONFIG: '/y.json' })).toBe('/y.json');
  });

  it('writes the token readable by its owner only, and the environment overrides it', () => {
    const env = { HOME: dir };
    updateProfile(resolveSession(undefined, env), () => ({ url: 'http://c:8000', username: 'alice', token: 'a'.repeat(40) }));
    const file = join(dir, '.svc', 'client.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, '.svc')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ current: 'default', profiles: { default: { url: 'http://c:8000', username: 'alice', token: 'a'.repeat(40) } } });
    expect(resolveSession(undefined, env)).toEqual(expect.objectContaining({ url: 'http://c:8000', token: 'a'.repeat(40), gitPort: 2222 }));
    expect(resolveSession(undefined, { ...env, SVC_URL: 'http://d', SVC_TOKEN: 'b', SVC_GIT_PORT: '2022' })).toEqual(
      expect.objectContaining({ url: 'http://d', token: 'b', gitPort: 2022 }),
    );
    expect(resolveSession('other', env).token).toBeUndefined();
  });

  it('keeps the router port (default 8080, the controller\'s ROUTER_PORT); SVC_ROUTER_PORT overrides it', () => {
    const env = { HOME: dir };
    expect(resolveSession(undefined, env).routerPort).toBe(8080);
    updateProfile(resolveSession(undefined, env), () => ({ url: 'http://c:8000', routerPort: 80 }));
    expect(resolveSession(undefined, env).routerPort).toBe(80);
    expect(resolveSession(undefined, { ...env, SVC_ROUTER_PORT: '9090' }).routerPort).toBe(9090);
    expect(() => resolveSession(undefined, { ...env, SVC_ROUTER_PORT: 'http' })).toThrow('SVC_ROUTER_PORT is not a port: http');
  });
});

describe('app URLs', () => {
  it('carry the router\'s port unless it is 80 (http) or 443 (https)', () => {
    expect(appUrlOf('myapp.localhost', 8080)).toBe('http://myapp.localhost:8080');
    expect(appUrlOf('myapp.example.com', 80)).toBe('http://myapp.example.com');
    expect(appUrlOf('myapp.example.com', 443)).toBe('https://myapp.example.com');
  });
});

describe('ps:scale', () => {
  it('prints one line, not the process table `svc ps` prints', () => {
    const line = scaledSummary('hello', { web: 2 }, [
      { type: 'web', num: 1, state: 'up', release: 'v2', created: '' },
      { type: 'web', num: 2, state: 'starting', release: 'v2', created: '' },
    ]);
    expect(line).toBe('Scaled hello: web=2 (now web.1 up, web.2 starting)');
    expect(scaledSummary('hello', { web: 0 }, [])).toBe('Scaled hello: web=0 (now no processes)');
  });
});

describe('a closed pipe', () => {
  it('ends the process quietly with 0 on EPIPE, and throws any other stream error', () => {
    const stream = new EventEmitter();
    const exits: number[] = [];
    exitQuietlyOnClosedPipe(stream, (code) => exits.push(code));
    stream.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(exits).toEqual([0]);
    expect(() => stream.emit('error', Object.assign(new Error('write EIO'), { code: 'EIO' }))).toThrow('write EIO');
    expect(exits).toEqual([0]);
  });
});

describe('git remotes', () => {
  it('points at the controller host and the git port', () => {
    expect(gitUrlOf('http://127.0.0.1:8000', 2222, 'myapp')).toBe('ssh://git@127.0.0.1:2222/myapp.git');
    expect(gitUrlOf('https://[::1]:8000', 22, 'a')).toBe('ssh://git@[::1]:22/a.git');
  });

  it('finds no app outside a checkout', () => {
    expect(appOfCheckout(tmpdir())).toBeNull();
  });
});
