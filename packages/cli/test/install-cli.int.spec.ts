import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { VERSION } from '../src/version';

// Compiles the client with tsc: slow on a loaded machine.
jest.setTimeout(180_000);

const CHECKOUT = join(__dirname, '..', '..', '..');
const SCRIPT = join(CHECKOUT, 'scripts', 'install-cli.sh');

describe('scripts/install-cli.sh', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-install-cli-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('links the checkout\'s svc into a bin directory, and it runs from any other directory', () => {
    const bin = join(root, 'bin');
    // Only node (for the shim's `#!/usr/bin/env node`) and the system's programs: no npm, no npx.
    const env = { HOME: root, PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin` };
    execFileSync(SCRIPT, [bin], { cwd: root, env, stdio: 'pipe' });
    expect(readlinkSync(join(bin, 'svc'))).toBe(join(CHECKOUT, 'packages', 'cli', 'bin', 'svc.js'));

    const elsewhere = mkdtempSync(join(root, 'myapp-'));
    const version = spawnSync('svc', ['--version'], { cwd: elsewhere, env, encoding: 'utf8' });
    expect({ status: version.status, stdout: version.stdout, stderr: version.stderr }).toEqual({ status: 0, stdout: `${VERSION}\n`, stderr: '' });
    // An app command outside any checkout and before any login: the client's own answer (exit 3).
    const apps = spawnSync('svc', ['apps'], { cwd: elsewhere, env, encoding: 'utf8' });
    expect({ status: apps.status, stderr: apps.stderr }).toEqual({ status: 3, stderr: expect.stringContaining('svc login') });
  });

  it('refuses to replace an svc that is not this checkout\'s', () => {
    const bin = join(root, 'other-bin');
    execFileSync('mkdir', ['-p', bin]);
    execFileSync('ln', ['-s', '/bin/true', join(bin, 'svc')]);
    const outcome = spawnSync(SCRIPT, [bin], { cwd: root, env: { HOME: root, PATH: process.env.PATH }, encoding: 'utf8' });
    expect(outcome.status).toBe(1);
    expect(outcome.stderr).toContain('is not this checkout\'s svc');
    expect(readlinkSync(join(bin, 'svc'))).toBe('/bin/true');
  });
});
