import {
  BUILDPACK_NOT_ALLOWED,
  BUILDPACK_RELEASE_INVALID,
  RELEASE_OUTPUT_MAX_LENGTH,
  RequestRejected,
  isBuildpackUrlAllowed,
  mergeProcessTypes,
  noBuildpackDetected,
  normaliseBuildpackUrl,
  parseBuildpackChoice,
  parseBuildpackRelease,
} from '@svc/core';
import { thrownBy } from './support/world';

const ALLOW = ['https://github.com/acme/', 'https://git.example.com/packs/ruby.git'];

describe('parseBuildpackChoice', () => {
  it('is auto when BUILDPACK_URL is unset or blank', () => {
    expect(parseBuildpackChoice(undefined, ALLOW)).toEqual({ kind: 'auto' });
    expect(parseBuildpackChoice('   ', ALLOW)).toEqual({ kind: 'auto' });
  });

  it('reads a bare name as an installed buildpack, with any allow-list', () => {
    expect(parseBuildpackChoice('node', [])).toEqual({ kind: 'named', name: 'node' });
    expect(parseBuildpackChoice(' heroku-buildpack_go.v2 ', [])).toEqual({ kind: 'named', name: 'heroku-buildpack_go.v2' });
  });

  it('admits a URL under an allowed prefix, normalised, with its #ref', () => {
    expect(parseBuildpackChoice('HTTPS://GitHub.com:443/acme/node-pack.git#v1.2/fix', ALLOW)).toEqual({
      kind: 'url',
      url: 'https://github.com/acme/node-pack.git',
      ref: 'v1.2/fix',
    });
  });

  it('admits an exact allowed URL, with or without a trailing slash, and without a ref', () => {
    expect(parseBuildpackChoice('https://git.example.com/packs/ruby.git', ALLOW)).toEqual({ kind: 'url', url: 'https://git.example.com/packs/ruby.git', ref: null });
    expect(parseBuildpackChoice('https://git.example.com/packs/ruby.git/#', ALLOW)).toEqual({ kind: 'url', url: 'https://git.example.com/packs/ruby.git', ref: null });
  });

  it('refuses every URL when the operator lists none, saying which setting admits them', () => {
    const error = thrownBy(() => parseBuildpackChoice('https://github.com/acme/pack', []));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe(BUILDPACK_NOT_ALLOWED);
    expect(error.message).toMatch(/admits no buildpack URL/);
    expect(error.message).toContain('BUILDPACK_URL_ALLOW');
  });

  it.each([
    ['another owner', 'https://github.com/evil/pack'],
    ['a look-alike prefix', 'https://github.com/acme-evil/pack'],
    ['the prefix itself', 'https://github.com/acme/'],
    ['a longer exact URL', 'https://git.example.com/packs/ruby.git.evil'],
    ['a path under an exact URL', 'https://git.example.com/packs/ruby.git/x'],
    ['another scheme of an allowed URL', 'http://github.com/acme/pack'],
    ['another port', 'https://github.com:8443/acme/pack'],
    ['a host suffix', 'https://github.com.evil.example/acme/pack'],
  ])('refuses %s as not admitted', (_what, url) => {
    const error = thrownBy(() => parseBuildpackChoice(url, ALLOW));

    expect(error.code).toBe(BUILDPACK_NOT_ALLOWED);
    expect(error.message).toMatch(/not among the buildpack URLs the operator admits/);
  });

  it.each([
    ['credentials', 'https://user:pw@github.com/acme/pack', /credentials/],
    ['a user name', 'https://token@github.com/acme/pack', /credentials/],
    ['a dot-dot segment', 'https://github.com/acme/../evil/pack', /"\.\."/],
    ['a dot segment', 'https://github.com/acme/./pack', /"\.\."/],
    ['an encoded dot-dot', 'https://github.com/acme/%2e%2e/evil/pack', /percent/],
    ['an encoded slash', 'https://github.com/acme/x%2F..%2Fevil', /percent/],
    ['a backslash', 'https://github.com/acme\\..\\evil', /backslash/],
    ['a file URL', 'file:///etc/buildpacks/x', /https/],
    ['an ssh URL', 'ssh://git@github.com/acme/pack', /https/],
    ['a scp-like address', 'git@github.com:acme/pack.git', /https/],
    ['git\'s ext transport', 'ext::sh -c touch% /tmp/pwned', /percent|spaces|https/],
    ['a query', 'https://github.com/acme/pack?ref=x', /query/],
    ['a newline', 'https://github.com/acme/pack\nhttps://evil', /control|spaces/],
    ['an option as ref', 'https://github.com/acme/pack#--upload-pack=evil', /branch, tag or commit/],
    ['a dot-dot ref', 'https://github.com/acme/pack#a..b', /branch, tag or commit/],
    ['a second fragment', 'https://github.com/acme/pack#a#b', /branch, tag or commit/],
    ['a name with dot-dot', '..', /https/],
  ])('refuses a URL with %s, saying why', (_what, value, why) => {
    const error = thrownBy(() => parseBuildpackChoice(value, ALLOW));

    expect(error.code).toBe(BUILDPACK_NOT_ALLOWED);
    expect(error.message).toMatch(why);
  });

  it('does not repeat a password written into the URL', () => {
    expect(thrownBy(() => parseBuildpackChoice('https://u:hunter2@github.com/acme/p', ALLOW)).message).not.toContain('hunter2');
  });
});

describe('normaliseBuildpackUrl and isBuildpackUrlAllowed', () => {
  it('lowercases the scheme and host, drops the default port and trailing slashes', () => {
    expect(normaliseBuildpackUrl('HTTPS://Example.COM:443/A/b.git//')).toBe('https://example.com/A/b.git');
    expect(normaliseBuildpackUrl('https://example.com/a/', true)).toBe('https://example.com/a/');
  });

  it('ignores an allow-list entry that is itself unusable', () => {
    expect(isBuildpackUrlAllowed('https://github.com/acme/p', ['https://u:p@github.com/acme/'])).toBe(false);
    expect(isBuildpackUrlAllowed('https://github.com/acme/p', ['https://github.com/acme/'])).toBe(true);
  });
});

describe('parseBuildpackRelease', () => {
  it('reads default_process_types and ignores addons and config_vars', () => {
    const text = [
      '---',
      'addons:',
      '  - heroku-postgresql',
      'config_vars:',
      '  PATH: /app/bin:/usr/bin',
      '  web: not-a-process',
      'default_process_types:',
      '  web: node server.js --port $PORT',
      '  worker: "node worker.js # not a comment"',
      "  clock: 'echo ''tick'''",
      '  release: ./migrate   # run once per release',
    ].join('\n');

    expect(parseBuildpackRelease(text)).toEqual({
      web: 'node server.js --port $PORT',
      worker: 'node worker.js # not a comment',
      clock: "echo 'tick'",
      release: './migrate',
    });
  });

  it('reads nothing, an empty mapping or no default_process_types as no process type', () => {
    expect(parseBuildpackRelease('')).toEqual({});
    expect(parseBuildpackRelease('--- {}\n')).toEqual({});
    expect(parseBuildpackRelease('---\ndefault_process_types: {}\n')).toEqual({});
    expect(parseBuildpackRelease('config_vars:\n  A: b\n')).toEqual({});
  });

  it('gives a process type named __proto__ no special meaning: it is refused like any bad type', () => {
    const error = thrownBy(() => parseBuildpackRelease('default_process_types:\n  __proto__: x\n  constructor: y\n'));

    expect(error.code).toBe(BUILDPACK_RELEASE_INVALID);
    expect(error.message).toContain('"__proto__"');
  });

  it.each([
    ['an invalid type', 'default_process_types:\n  Web: x\n', /line 2: process types can only contain/],
    ['a duplicate type', 'default_process_types:\n  web: a\n  web: b\n', /line 3: the process type web is declared twice/],
    ['an empty command', 'default_process_types:\n  web:\n', /line 2: the process type web has no command/],
    ['a line without a colon', 'default_process_types:\n  node server.js\n', /line 2: expected/],
    ['a block scalar', 'default_process_types:\n  web: |\n    node x\n', /not a valid YAML string/],
    ['a flow mapping', 'default_process_types: {web: x}\n', /indented/],
    ['an unterminated quote', 'default_process_types:\n  web: "node x\n', /not a valid YAML string/],
    ['an escaped newline', 'default_process_types:\n  web: "a\\nrm -rf /"\n', /not a valid YAML string/],
    ['a lone single quote', "default_process_types:\n  web: 'a'b'\n", /not a valid YAML string/],
  ])('refuses %s with the line that is wrong', (_what, text, why) => {
    const error = thrownBy(() => parseBuildpackRelease(text));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe(BUILDPACK_RELEASE_INVALID);
    expect(error.message).toMatch(why);
  });

  it('refuses output past its size limit', () => {
    const error = thrownBy(() => parseBuildpackRelease(`default_process_types:\n  web: ${'x'.repeat(RELEASE_OUTPUT_MAX_LENGTH)}\n`));

    expect(error.code).toBe(BUILDPACK_RELEASE_INVALID);
  });
});

describe('mergeProcessTypes', () => {
  it('keeps the buildpack defaults the Procfile does not name, and lets the Procfile win', () => {
    expect(mergeProcessTypes({ web: 'default web', release: 'default migrate' }, { web: 'my web', worker: 'my worker' })).toEqual({
      web: 'my web',
      release: 'default migrate',
      worker: 'my worker',
    });
  });
});

describe('noBuildpackDetected', () => {
  it('lists what was tried and what each looks for', () => {
    const error = noBuildpackDetected([{ name: 'node', needs: 'package.json' }, { name: 'plain', needs: 'a Procfile' }, { name: 'custom' }]);

    expect(error.code).toBe('BUILD.NO_BUILDPACK');
    expect(error.message).toBe(
      'No buildpack detected this app: node needs package.json, plain needs a Procfile, custom did not detect it. '
      + 'Add what one of them looks for, or set BUILDPACK_URL to choose one.',
    );
  });
});
