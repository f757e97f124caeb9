import { ROLLBACK_TARGETS_SHOWN, describeVersions, rollbackEmptiesApp, sourceGoesWithRetention } from '@svc/core';

describe('rollbackEmptiesApp', () => {
  it.each<[string | null, string | null, boolean]>([
    ['b1', null, true],
    ['b1', 'b0', false],
    [null, null, false],
    [null, 'b0', false],
  ])('from a release with build %p to one with build %p: %p', (current, target, refused) => {
    expect(rollbackEmptiesApp({ build: current }, { build: target })).toBe(refused);
  });
});

describe('sourceGoesWithRetention', () => {
  it.each<[string, string | null, boolean]>([
    ['myapp:git-abc1234', '/data/builds/myapp/abc', true],
    ['myapp:7', null, true],
    ['example/myapp:7', null, false],
    ['other:7', null, false],
    ['myapp:latest', null, false],
  ])('image %p with workdir %p: %p', (image, workdir, goes) => {
    expect(sourceGoesWithRetention('myapp', { image, workdir })).toBe(goes);
  });
});

describe('describeVersions', () => {
  it.each<[number[], string]>([
    [[], 'none'],
    [[3], 'v3'],
    [[2, 3, 4, 5], 'v2 to v5'],
    [[9, 2, 4, 3, 7, 10], 'v2 to v4, v7, v9 to v10'],
    [[5, 5, 6], 'v5 to v6'],
  ])('%p as %p', (versions, text) => {
    expect(describeVersions(versions)).toBe(text);
  });

  it(`names the newest ${ROLLBACK_TARGETS_SHOWN} runs only, with how many earlier versions are left out`, () => {
    // Every other version from v1 to v29: 15 runs of one.
    const versions = Array.from({ length: 15 }, (_, i) => 1 + 2 * i);

    expect(describeVersions(versions)).toBe('v11, v13, v15, v17, v19, v21, v23, v25, v27, v29 (and 5 earlier ones)');
    // A run left out counts every version in it.
    const tenSingles = Array.from({ length: 10 }, (_, i) => 10 + 2 * i);
    expect(describeVersions([1, 2, ...tenSingles])).toBe(`${describeVersions(tenSingles)} (and 2 earlier ones)`);
    expect(describeVersions([1, ...tenSingles])).toBe(`${describeVersions(tenSingles)} (and 1 earlier one)`);
  });
});
