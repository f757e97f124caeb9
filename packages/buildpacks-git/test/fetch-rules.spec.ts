import { BUILDPACK_FETCH, isFetchableRef, redactUrl } from '@svc/buildpacks-git';
import { fetchKey, fetchedName, isFetchableUrl, looksLikeCommit } from '../src/fetch-rules';
import { gitReason } from '../src/git-fetch';
import { isBuildpackName } from '../src/buildpack-directory';

describe('fetch rules', () => {
  it('admits branch, tag and commit names, and refuses what git could read as an option or a path trick', () => {
    for (const ref of ['main', 'v1.2.3', 'release/2026-11', 'feature_x', 'a1b2c3d', '0123456789abcdef0123456789abcdef01234567']) {
      expect(isFetchableRef(ref)).toBe(true);
    }
    for (const ref of ['', '-b', '--upload-pack=x', '/main', 'main/', 'a..b', 'a//b', 'refs/.hidden', 'x.lock', 'main.', 'has space', 'a:b', 'x~1', 'x^', 'a\nb', 'x'.repeat(201)]) {
      expect(isFetchableRef(ref)).toBe(false);
    }
  });

  it('reads 4 to 40 lowercase hex digits as a commit', () => {
    expect(looksLikeCommit('abcd')).toBe(true);
    expect(looksLikeCommit('0123456789abcdef0123456789abcdef01234567')).toBe(true);
    expect(looksLikeCommit('abc')).toBe(false);
    expect(looksLikeCommit('main')).toBe(false);
    expect(looksLikeCommit('ABCDEF')).toBe(false);
  });

  it('refuses URLs that are empty, start like an option or hold whitespace or control characters', () => {
    expect(isFetchableUrl('https://example.com/buildpack.git')).toBe(true);
    expect(isFetchableUrl('file:///srv/buildpacks/ruby')).toBe(true);
    for (const url of ['', '-oProxyCommand=x', 'https://e.com/a b', 'https://e.com/\u0000', `https://e.com/${'x'.repeat(2048)}`]) {
      expect(isFetchableUrl(url)).toBe(false);
    }
  });

  it('names a fetch by URL and ref, and keys its directory by their hash', () => {
    expect(fetchedName('https://e.com/bp.git', null)).toBe('https://e.com/bp.git');
    expect(fetchedName('https://e.com/bp.git', 'v1')).toBe('https://e.com/bp.git#v1');
    expect(fetchKey('https://e.com/bp.git', 'v1')).toMatch(/^[0-9a-f]{64}$/);
    expect(fetchKey('https://e.com/bp.git', 'v1')).not.toBe(fetchKey('https://e.com/bp.git', 'v2'));
    expect(fetchKey('https://e.com/bp.git', null)).not.toBe(fetchKey('https://e.com/bp.git', 'v1'));
  });

  it('hides the user information of a URL', () => {
    expect(redactUrl('https://user:s3cret@e.com/bp.git')).toBe('https://***@e.com/bp.git');
    expect(redactUrl('https://token@e.com/bp.git')).toBe('https://***@e.com/bp.git');
    expect(redactUrl('https://e.com/bp.git')).toBe('https://e.com/bp.git');
    expect(redactUrl('https://e.com/path@v1')).toBe('https://e.com/path@v1');
  });

  it('takes git\'s first fatal line as the reason', () => {
    const stderr = "fatal: '/x' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
    expect(gitReason({ code: 128, stderr })).toBe("'/x' does not appear to be a git repository");
    expect(gitReason({ code: 1, stderr: 'warning: something\n' })).toBe('warning: something');
    expect(gitReason({ code: 2, stderr: '' })).toBe('git exited with status 2');
  });

  it('admits safe buildpack directory names only', () => {
    expect(isBuildpackName('node')).toBe(true);
    expect(isBuildpackName('Go-1.22_x')).toBe(true);
    for (const name of ['', '.hidden', '-x', '..', 'a/b', 'a b', 'x'.repeat(65)]) expect(isBuildpackName(name)).toBe(false);
  });

  it('has the code of the port', () => {
    expect(BUILDPACK_FETCH).toBe('BUILD.BUILDPACK_FETCH');
  });
});
