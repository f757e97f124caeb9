import { formatBytes, memoryLimitBytes } from '@svc/core';

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
