import { niceForCpuShares } from '@svc/scheduler-process';

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
