import {
  API_VERSIONS,
  ClientVersionMismatch,
  LATEST_API_VERSION,
  UnsupportedApiVersion,
  assertClientVersion,
  parseApiVersion,
  policyFor,
} from '@svc/core';
import type { ApiVersion, VersionedFeature } from '@svc/core';
import { thrownBy } from './support/world';

/** Versions from `from` (inclusive) on, and the ones before it. */
function split(from: ApiVersion): { before: ApiVersion[]; since: ApiVersion[] } {
  const index = API_VERSIONS.indexOf(from);
  return { before: API_VERSIONS.slice(0, index), since: API_VERSIONS.slice(index) };
}

describe('API versions', () => {
  it('speaks exactly 1.0 to 1.7, latest 1.7', () => {
    expect([...API_VERSIONS]).toEqual(['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7']);
    expect(LATEST_API_VERSION).toBe('1.7');
  });

  it('policyFor gives each version a policy that names that version', () => {
    for (const version of API_VERSIONS) expect(policyFor(version).version).toBe(version);
  });

  it('policyFor returns frozen policies, so no caller can change a version for everyone', () => {
    const policy = policyFor('1.3');
    expect(Object.isFrozen(policy)).toBe(true);
    expect(() => {
      (policy as { errorBody: string }).errorBody = 'bare-string';
    }).toThrow(TypeError);
  });
});

describe('parseApiVersion', () => {
  it.each(API_VERSIONS.map((v) => [v]))('accepts %s', (version) => {
    expect(parseApiVersion(version)).toBe(version);
  });

  it('ignores surrounding whitespace', () => {
    expect(parseApiVersion(' 1.3 ')).toBe('1.3');
  });

  it.each([['1.8'], ['2.0'], ['0.9'], ['1'], ['1.07'], ['v1.2'], ['latest'], ['']])(
    'refuses %p with UnsupportedApiVersion "Unsupported API version: <v>"',
    (text) => {
      const error = thrownBy(() => parseApiVersion(text));
      expect(error).toBeInstanceOf(UnsupportedApiVersion);
      expect(error.message).toBe(`Unsupported API version: ${text.trim()}`);
      expect(error.code).toBe('API.UNSUPPORTED_VERSION');
    },
  );
});

describe('assertClientVersion', () => {
  it.each([['1'], ['1.0'], ['1.7'], ['1.99'], [' 1.2 ']])('accepts client version %p with major 1', (text) => {
    expect(() => assertClientVersion(text)).not.toThrow();
  });

  it.each([['2'], ['2.0'], ['0.9'], ['v1'], ['11.0']])(
    'refuses client version %p with the "versions do not match" message',
    (text) => {
      const error = thrownBy(() => assertClientVersion(text));
      expect(error).toBeInstanceOf(ClientVersionMismatch);
      expect(error.message).toBe(`Client and server versions do not match. Client version: ${text} Server version: 1`);
    },
  );
});

describe('version policy: the seed\'s "Changes by version" table', () => {
  it('1.0 sends no version headers, 1.1 to 1.3 the X_ pair, 1.4 and later both pairs', () => {
    expect(API_VERSIONS.map((v) => [v, policyFor(v).versionHeaders])).toEqual([
      ['1.0', 'none'],
      ['1.1', 'x-prefixed'],
      ['1.2', 'x-prefixed'],
      ['1.3', 'x-prefixed'],
      ['1.4', 'both'],
      ['1.5', 'both'],
      ['1.6', 'both'],
      ['1.7', 'both'],
    ]);
  });

  it('the Deis v1 client\'s names (DEIS_API_VERSION, DEIS_PLATFORM_VERSION) are sent from 1.4, with the unprefixed pair', () => {
    const { before, since } = split('1.4');
    for (const v of before) expect(policyFor(v).deisVersionHeaders).toBe(false);
    for (const v of since) expect(policyFor(v).deisVersionHeaders).toBe(true);
  });

  it('release header is X-Svc-Release up to 1.3, Svc-Release and X-Svc-Release from 1.4', () => {
    const { before, since } = split('1.4');
    for (const v of before) expect(policyFor(v).releaseHeaders).toEqual(['X-Svc-Release']);
    for (const v of since) expect(policyFor(v).releaseHeaders).toEqual(['Svc-Release', 'X-Svc-Release']);
  });

  it('1.0 answers business errors with a bare string, 1.1 and later with {detail}', () => {
    const { before, since } = split('1.1');
    for (const v of before) expect(policyFor(v).errorBody).toBe('bare-string');
    for (const v of since) expect(policyFor(v).errorBody).toBe('detail');
  });

  it('an app the caller may not see is 403 in 1.0 and 404 from 1.1', () => {
    const { before, since } = split('1.1');
    for (const v of before) expect(policyFor(v).hiddenAppStatus).toBe(403);
    for (const v of since) expect(policyFor(v).hiddenAppStatus).toBe(404);
  });

  it('run answers {rc, output} up to 1.4 and [rc, output] from 1.5', () => {
    const { before, since } = split('1.5');
    for (const v of before) expect(policyFor(v).runResponse).toBe('object');
    for (const v of since) expect(policyFor(v).runResponse).toBe('array');
  });

  it('logs are a JSON string up to 1.6 and plain text lines in 1.7', () => {
    const { before, since } = split('1.7');
    expect(since).toEqual(['1.7']);
    for (const v of before) expect(policyFor(v).logsBody).toBe('json-string');
    expect(policyFor('1.7').logsBody).toBe('text');
  });

  it('page_size is honoured from 1.6 only', () => {
    const { before, since } = split('1.6');
    for (const v of before) expect(policyFor(v).honoursPageSize).toBe(false);
    for (const v of since) expect(policyFor(v).honoursPageSize).toBe(true);
  });

  it('log_lines is honoured from 1.3 only', () => {
    const { before, since } = split('1.3');
    for (const v of before) expect(policyFor(v).honoursLogLines).toBe(false);
    for (const v of since) expect(policyFor(v).honoursLogLines).toBe(true);
  });

  it('a certificate common name override is accepted from 1.3 only', () => {
    const { before, since } = split('1.3');
    for (const v of before) expect(policyFor(v).certCommonNameOverride).toBe(false);
    for (const v of since) expect(policyFor(v).certCommonNameOverride).toBe(true);
  });

  it('administrators acting on another user need their own password up to 1.5, not from 1.6', () => {
    const { before, since } = split('1.6');
    for (const v of before) expect(policyFor(v).adminNeedsPasswordForOthers).toBe(true);
    for (const v of since) expect(policyFor(v).adminNeedsPasswordForOthers).toBe(false);
  });

  const FEATURES: Array<[VersionedFeature, ApiVersion]> = [
    ['certs', '1.2'],
    ['users', '1.3'],
    ['restart', '1.3'],
    ['passwd', '1.4'],
    ['tokens', '1.5'],
    ['appUpdate', '1.7'],
  ];

  it.each(FEATURES)('endpoint group %s exists from %s on and not before', (feature, from) => {
    const { before, since } = split(from);
    for (const v of before) expect(policyFor(v).features.has(feature)).toBe(false);
    for (const v of since) expect(policyFor(v).features.has(feature)).toBe(true);
  });

  it('1.0 and 1.1 have none of the versioned endpoints and 1.7 has all of them', () => {
    expect([...policyFor('1.0').features]).toEqual([]);
    expect([...policyFor('1.1').features]).toEqual([]);
    expect([...policyFor('1.7').features].sort()).toEqual(FEATURES.map(([f]) => f).sort());
  });
});
