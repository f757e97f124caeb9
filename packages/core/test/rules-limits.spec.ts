import { boundedDiskBytes, buildOverCacheLimit, buildOverImageLimit, formatBytes, memoryLimitBytes } from '@svc/core';

describe('memoryLimitBytes', () => {
  it('reads memory limits in powers of 1024, as the Docker scheduler sets them', () => {
    expect(memoryLimitBytes('64M')).toBe(64 * 1024 * 1024);
    expect(memoryLimitBytes('1g')).toBe(1024 ** 3);
    expect(memoryLimitBytes(null)).toBeNull();
    expect(() => memoryLimitBytes('lots')).toThrow(/unreadable memory limit/);
  });


  it.each([
    ['512M', 512 * 1024 ** 2],
    ['1g', 1024 ** 3],
    ['64MB', 64 * 1024 ** 2],
    ['2048K', 2048 * 1024],
    ['100B', 100],
  ])('reads %s as %d bytes (units are powers of 1024)', (text, bytes) => {
    expect(memoryLimitBytes(text)).toBe(bytes);
  });

  it('is null without a limit and throws for text that is not a limit', () => {
    expect(memoryLimitBytes(null)).toBeNull();
    expect(() => memoryLimitBytes('lots')).toThrow('unreadable memory limit "lots"');
  });
});

describe('formatBytes', () => {
  it('writes byte counts in binary units', () => {
    expect([formatBytes(512), formatBytes(2048), formatBytes(80.5 * 1024 ** 2), formatBytes(3 * 1024 ** 3)]).toEqual(['512 B', '2.0 KiB', '80.5 MiB', '3.0 GiB']);
  });
});

describe('build disk limits', () => {
  const MIB = 1024 ** 2;

  it('sizes the file system of a limit as the limit, a sixteenth more and 8 MiB, so that a build just over it is seen over it', () => {
    expect(boundedDiskBytes(0)).toBe(8 * MIB);
    expect(boundedDiskBytes(200 * MIB)).toBe(200 * MIB + 12.5 * MIB + 8 * MIB);
    expect(boundedDiskBytes(2048 * MIB)).toBe(2048 * MIB + 128 * MIB + 8 * MIB);
  });

  it('says a refused build with the figures, in MiB as the settings read them', () => {
    expect(buildOverImageLimit(276 * MIB, 200 * MIB)).toBe('the build made 276 MiB, over BUILD_IMAGE_LIMIT_MB=200: nothing of it is kept.');
    expect(buildOverImageLimit(16.5 * MIB + 1, 16 * MIB)).toBe('the build made 16.5 MiB, over BUILD_IMAGE_LIMIT_MB=16: nothing of it is kept.');
    expect(buildOverCacheLimit(70 * MIB, 64 * MIB, 'stays')).toBe(
      "the build cache took 70 MiB, over BUILD_CACHE_LIMIT_MB=64 (writes past it fail): nothing of this build's cache is kept, the previous one stays.",
    );
    expect(buildOverCacheLimit(0.5 * MIB, 0.25 * MIB, 'emptied')).toMatch(/took 0\.5 MiB, over BUILD_CACHE_LIMIT_MB=0\.25 .*the next build starts without one\.$/);
  });
});
