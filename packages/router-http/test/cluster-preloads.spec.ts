import { preloadsOf } from '../src/cluster';

describe('preloadsOf', () => {
  it("passes the controller's preloaded modules on to its workers, and none of its other Node options", () => {
    expect(preloadsOf(['--cpu-prof', '-r', '/copy/resolver.js', '--inspect=9229', '--require=/a.js', '--require', '/b.js', '--max-old-space-size=512'])).toEqual([
      '-r',
      '/copy/resolver.js',
      '--require=/a.js',
      '--require',
      '/b.js',
    ]);
    expect(preloadsOf([])).toEqual([]);
    expect(preloadsOf(['-r'])).toEqual([]);
  });
});
