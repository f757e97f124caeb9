import { formatBytes, memoryLimitBytes, niceForCpuShares } from '@svc/scheduler-process';

describe('memoryLimitBytes', () => {
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

describe('niceForCpuShares', () => {
  it.each([
    [null, 0],
    [0, 0],
    [1024, 0],
    [512, 3],
    [256, 6],
    [100, 10],
    [1, 19],
  ])('maps cpu %p to niceness %d (each step is about 1.25 times less weight)', (shares, nice) => {
    expect(niceForCpuShares(shares)).toBe(nice);
  });
});

describe('formatBytes', () => {
  it('writes byte counts in binary units', () => {
    expect([formatBytes(512), formatBytes(2048), formatBytes(80.5 * 1024 ** 2), formatBytes(3 * 1024 ** 3)]).toEqual(['512 B', '2.0 KiB', '80.5 MiB', '3.0 GiB']);
  });
});
