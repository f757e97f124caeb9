import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROFILE_SCRIPTS_DIR, withProfileScripts } from '../src';

/** Runs the script under sh with its profile directory at `dir` (the build's /app/.profile.d). */
function run(command: string, dir: string): { status: number | null; stdout: string } {
  const script = withProfileScripts(command).replace(PROFILE_SCRIPTS_DIR, dir);
  const outcome = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
  return { status: outcome.status, stdout: outcome.stdout };
}

describe('withProfileScripts', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-profile-'));
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('sources every .sh of the build\'s .profile.d in name order before the command, which sees what they export', () => {
    const dir = join(root, '.profile.d');
    mkdirSync(dir);
    writeFileSync(join(dir, 'b.sh'), 'export ORDER="$ORDER b"\n');
    writeFileSync(join(dir, 'a.sh'), 'export ORDER="a"; export PATH="/venv/bin:$PATH"\n');
    writeFileSync(join(dir, 'notes.txt'), 'export ORDER=never\n');

    expect(run('echo "$ORDER|$PATH|${svc_profile-unset}"', dir)).toEqual({ status: 0, stdout: 'a b|/venv/bin:/usr/bin:/bin|unset\n' });
  });

  it('runs the command as it is, with its exit status, when the build has no .profile.d', () => {
    expect(run('echo "two words"; exit 7', join(root, 'none'))).toEqual({ status: 7, stdout: 'two words\n' });
    expect(withProfileScripts('npm start').endsWith('\nnpm start')).toBe(true);
  });
});
