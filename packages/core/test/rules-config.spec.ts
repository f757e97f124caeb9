import {
  ValidationFailed,
  describeConfigChange,
  mergeConfig,
  parseConfigChanges,
  assertServiceVariablesCurrent,
  releaseEnvironment,
} from '@svc/core';
import type { ConfigChanges, MergedConfig } from '@svc/core';
import { aConfig } from '@svc/core/testing';
import { thrownBy } from './support/world';

const NO_CHANGES: ConfigChanges = { values: {}, memory: {}, cpu: {}, tags: {} };
const EMPTY: MergedConfig = { values: {}, memory: {}, cpu: {}, tags: {} };

function fieldsOf(run: () => unknown): Record<string, string[]> {
  const error = thrownBy(run);
  expect(error).toBeInstanceOf(ValidationFailed);
  return error.fields ?? {};
}

describe('parseConfigChanges', () => {
  it('reads values, memory, cpu and tags into changes', () => {
    expect(
      parseConfigChanges({
        values: { FOO: 'bar', _under: 'x' },
        memory: { web: '512M' },
        cpu: { web: 512 },
        tags: { rack: 'r1_a' },
      }),
    ).toEqual({ values: { FOO: 'bar', _under: 'x' }, memory: { web: '512M' }, cpu: { web: 512 }, tags: { rack: 'r1_a' } });
  });

  it('an empty body or absent/null sections give no changes', () => {
    expect(parseConfigChanges({})).toEqual(NO_CHANGES);
    expect(parseConfigChanges({ values: null, memory: null, cpu: null, tags: null })).toEqual(NO_CHANGES);
  });

  it('a null value in any section unsets that key', () => {
    expect(parseConfigChanges({ values: { FOO: null }, memory: { web: null }, cpu: { web: null }, tags: { rack: null } })).toEqual({
      values: { FOO: null },
      memory: { web: null },
      cpu: { web: null },
      tags: { rack: null },
    });
  });

  it('accepts a body that is a JSON string holding the object (double-encoded by old clients)', () => {
    expect(parseConfigChanges(JSON.stringify({ values: { FOO: 'bar' }, cpu: { web: '10' } }))).toEqual({
      ...NO_CHANGES,
      values: { FOO: 'bar' },
      cpu: { web: 10 },
    });
  });

  it.each([['not json'], ['"just a string"'], ['[1,2]'], ['null'], ['42']])(
    'refuses a string body %p that does not hold an object, on non_field_errors',
    (body) => {
      expect(fieldsOf(() => parseConfigChanges(body))).toEqual({ non_field_errors: ['Invalid data. Expected a dictionary.'] });
    },
  );

  it.each([[null], [[{ values: {} }]], [7]])('refuses a body %p that is not an object', (body) => {
    expect(Object.keys(fieldsOf(() => parseConfigChanges(body)))).toEqual(['non_field_errors']);
  });

  it.each([['values'], ['memory'], ['cpu'], ['tags']])('refuses a %s section that is not an object', (section) => {
    expect(fieldsOf(() => parseConfigChanges({ [section]: ['A'] }))).toEqual({ [section]: ['Expected a dictionary of items.'] });
  });

  describe('values', () => {
    it('coerces numbers and booleans to strings', () => {
      expect(parseConfigChanges({ values: { PORTS: 5000, RATIO: 1.5, DEBUG: true, QUIET: false } }).values).toEqual({
        PORTS: '5000',
        RATIO: '1.5',
        DEBUG: 'true',
        QUIET: 'false',
      });
    });

    it.each([[{ nested: 1 }], [['a']]])('refuses a value %p that is an object or array', (value) => {
      expect(fieldsOf(() => parseConfigChanges({ values: { FOO: value } }))).toEqual({
        values: ['Config values must be strings, numbers or booleans: FOO'],
      });
    });

    it.each([['1FOO'], ['FOO-BAR'], ['FOO BAR'], ['FÖO'], ['']])('refuses the key %p', (key) => {
      expect(fieldsOf(() => parseConfigChanges({ values: { [key]: 'x' } }))).toEqual({
        values: [`Config keys must start with a letter or underscore and contain only [A-Za-z0-9_]: ${key}`],
      });
    });

    it('keeps repeated service variables apart from the changes', () => {
      expect(parseConfigChanges({ values: { SVC_APP: 'myapp', SVC_RELEASE: 'v3', FOO: 'bar' } })).toEqual({
        ...NO_CHANGES,
        values: { FOO: 'bar' },
        repeated: { SVC_APP: 'myapp', SVC_RELEASE: 'v3' },
      });
    });

    it.each([['SVC_APP'], ['SVC_RELEASE']])('refuses setting the service variable %s to a value that is not current', (key) => {
      const changes = parseConfigChanges({ values: { [key]: 'mine' } });
      expect(fieldsOf(() => assertServiceVariablesCurrent(changes, { SVC_APP: 'myapp', SVC_RELEASE: 'v3' }))).toEqual({
        values: [`${key} is set by the platform and cannot be changed.`],
      });
    });

    it('accepts service variables repeated with their current values', () => {
      const changes = parseConfigChanges({ values: { SVC_APP: 'myapp', SVC_RELEASE: 'v3' } });
      expect(() => assertServiceVariablesCurrent(changes, { SVC_APP: 'myapp', SVC_RELEASE: 'v3' })).not.toThrow();
    });

    it.each([[5], [true], [{}]])('refuses a service variable given as %p', (value) => {
      expect(fieldsOf(() => parseConfigChanges({ values: { SVC_APP: value } }))).toEqual({
        values: ['SVC_APP is set by the platform and cannot be changed.'],
      });
    });

    it.each([['SVC_APP'], ['SVC_RELEASE']])('refuses unsetting the service variable %s', (key) => {
      expect(fieldsOf(() => parseConfigChanges({ values: { [key]: null } }))).toEqual({
        values: [`${key} is set by the platform and cannot be changed.`],
      });
    });
  });

  describe('memory', () => {
    it.each([['512M', '512M'], ['1g', '1G'], ['64kb', '64KB'], ['2048B', '2048B'], ['1GB', '1GB'], ['10mb', '10MB'], ['5K', '5K']])(
      'accepts %p as %p (units are case-insensitive and stored upper-case)',
      (given, stored) => {
        expect(parseConfigChanges({ memory: { web: given } }).memory).toEqual({ web: stored });
      },
    );

    it.each([['512'], ['M'], ['1.5G'], ['512 M'], ['1TB'], ['-1M'], [512]])('refuses the limit %p', (limit) => {
      expect(fieldsOf(() => parseConfigChanges({ memory: { web: limit } }))).toEqual({
        memory: ['Memory limit format: <number><unit>, where unit = B, K, M, G, KB, MB or GB: web'],
      });
    });

    it.each([['Web'], ['web worker'], ['-web'], ['web_'], ['web--1']])('refuses the process type %p', (type) => {
      expect(fieldsOf(() => parseConfigChanges({ memory: { [type]: '1G' } }))).toEqual({
        memory: [`Process types can only contain [a-z0-9-_]: ${type}`],
      });
    });

    it('accepts process types with inner dashes and underscores', () => {
      expect(parseConfigChanges({ memory: { 'web-1': '1G', worker_two: '2G' } }).memory).toEqual({ 'web-1': '1G', worker_two: '2G' });
    });
  });

  describe('cpu', () => {
    it.each([[0, 0], [1024, 1024], ['512', 512], [' 7 ', 7]])('accepts %p as %p shares', (given, shares) => {
      expect(parseConfigChanges({ cpu: { web: given } }).cpu).toEqual({ web: shares });
    });

    it.each([[-1], [1025], ['1025'], [1.5], ['abc'], [true], ['']])('refuses %p shares', (shares) => {
      expect(fieldsOf(() => parseConfigChanges({ cpu: { web: shares } }))).toEqual({
        cpu: ['CPU shares must be an integer from 0 to 1024: web'],
      });
    });

    it('refuses an invalid process type', () => {
      expect(fieldsOf(() => parseConfigChanges({ cpu: { WEB: 5 } }))).toEqual({ cpu: ['Process types can only contain [a-z0-9-_]: WEB'] });
    });
  });

  describe('tags', () => {
    it('accepts letter keys with [A-Za-z0-9_] values', () => {
      expect(parseConfigChanges({ tags: { environ: 'prod_1', Rack: 'B2' } }).tags).toEqual({ environ: 'prod_1', Rack: 'B2' });
    });

    it.each([['rack1'], ['rack_a'], ['rack-a']])('refuses the key %p', (key) => {
      expect(fieldsOf(() => parseConfigChanges({ tags: { [key]: 'a' } }))).toEqual({ tags: [`Tag keys can only contain letters: ${key}`] });
    });

    it.each([['a-b'], ['a b'], [''], [5]])('refuses the value %p', (value) => {
      expect(fieldsOf(() => parseConfigChanges({ tags: { rack: value } }))).toEqual({
        tags: ['Tag values can only contain [A-Za-z0-9_]: rack'],
      });
    });
  });

  it('reports every failing field at once, several messages per field', () => {
    expect(
      fieldsOf(() =>
        parseConfigChanges({
          values: { '1A': 'x', SVC_APP: null, OK: 'fine' },
          memory: { web: 'lots' },
          cpu: { web: 5000 },
          tags: { 'x-y': 'z' },
        }),
      ),
    ).toEqual({
      values: [
        'Config keys must start with a letter or underscore and contain only [A-Za-z0-9_]: 1A',
        'SVC_APP is set by the platform and cannot be changed.',
      ],
      memory: ['Memory limit format: <number><unit>, where unit = B, K, M, G, KB, MB or GB: web'],
      cpu: ['CPU shares must be an integer from 0 to 1024: web'],
      tags: ['Tag keys can only contain letters: x-y'],
    });
  });
});

describe('mergeConfig', () => {
  const current = aConfig({
    values: { KEEP: '1', CHANGE: 'old', DROP: 'x' },
    memory: { web: '512M', worker: '1G' },
    cpu: { web: 100 },
    tags: { rack: 'a', zone: 'z' },
  });

  it('adds, replaces and unsets keys in every section', () => {
    const merged = mergeConfig(current, {
      values: { CHANGE: 'new', DROP: null, ADD: 'y' },
      memory: { worker: null },
      cpu: { web: 200, worker: 50 },
      tags: { zone: null, rack: 'b' },
    });
    expect(merged).toEqual({
      values: { KEEP: '1', CHANGE: 'new', ADD: 'y' },
      memory: { web: '512M' },
      cpu: { web: 200, worker: 50 },
      tags: { rack: 'b' },
    });
  });

  it('unsetting an absent key is not an error and changes nothing', () => {
    expect(mergeConfig(current, { ...NO_CHANGES, values: { NEVER_SET: null } }).values).toEqual(current.values);
  });

  it('leaves the current config untouched', () => {
    const before = JSON.stringify(current);
    mergeConfig(current, { ...NO_CHANGES, values: { KEEP: null, NEW: 'n' } });
    expect(JSON.stringify(current)).toBe(before);
  });
});

describe('describeConfigChange', () => {
  const describe_ = (before: Partial<MergedConfig>, after: Partial<MergedConfig>): string =>
    describeConfigChange({ ...EMPTY, ...before }, { ...EMPTY, ...after });

  it('says "changed nothing" when nothing differs', () => {
    expect(describe_({ values: { A: '1' } }, { values: { A: '1' } })).toBe('changed nothing');
    expect(describe_({}, {})).toBe('changed nothing');
  });

  it('lists added, changed and deleted variables in that order, each sorted', () => {
    expect(
      describe_({ values: { C: '1', D: '1', Z: '1', Y: '1' } }, { values: { B: '1', A: '1', C: '2', Z: '2' } }),
    ).toBe('added A, B, changed C, Z, deleted D, Y');
  });

  it('names the limit kinds that changed, memory before cpu', () => {
    expect(describe_({ cpu: { web: 1 } }, { memory: { web: '1G' }, cpu: { web: 2 } })).toBe('changed limits for memory, cpu');
    expect(describe_({ cpu: { web: 1 } }, {})).toBe('changed limits for cpu');
    expect(describe_({ memory: { web: '1G' } }, { memory: { web: '2G' } })).toBe('changed limits for memory');
  });

  it('lists tags as added tag, changed tag, deleted tag, each sorted', () => {
    expect(describe_({ tags: { y: 'a', z: 'a' } }, { tags: { x: 'a', w: 'a', y: 'b' } })).toBe(
      'added tag w, x, changed tag y, deleted tag z',
    );
  });

  it('joins variables, limits and tags with " and "', () => {
    expect(describe_({}, { values: { FOO: 'x' }, memory: { web: '1G' } })).toBe('added FOO and changed limits for memory');
    expect(describe_({ tags: { rack: 'a' } }, { values: { FOO: 'x' }, cpu: { web: 1 }, tags: {} })).toBe(
      'added FOO and changed limits for cpu and deleted tag rack',
    );
  });
});

describe('releaseEnvironment', () => {
  it('is the config values plus SVC_APP and SVC_RELEASE v<N>', () => {
    expect(releaseEnvironment({ FOO: 'bar' }, 'myapp', 7)).toEqual({ FOO: 'bar', SVC_APP: 'myapp', SVC_RELEASE: 'v7' });
  });

  it('does not change the values it is given', () => {
    const values = { FOO: 'bar' };
    releaseEnvironment(values, 'myapp', 2);
    expect(values).toEqual({ FOO: 'bar' });
  });
});
