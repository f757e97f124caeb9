import { reservedShare } from '../src/cluster';
import { normalized } from '../src/limits';

describe('reservedShare', () => {
  it('divides the reserve between the workers like the total, rounded up', () => {
    expect(reservedShare(5000, 10_000, 2)).toBe(2500);
    expect(reservedShare(5, 10, 3)).toBe(2);
    expect(reservedShare(0, 10, 4)).toBe(0);
  });

  it('keeps a worker\'s reserve below its share of the total', () => {
    expect(reservedShare(9, 10, 4)).toBe(2);
    expect(reservedShare(1, 2, 2)).toBe(0);
  });
});

describe('normalized', () => {
  it('takes the IPv6 mapping off an IPv4 address only', () => {
    expect(normalized('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(normalized('10.0.0.1')).toBe('10.0.0.1');
    expect(normalized('2001:db8::1')).toBe('2001:db8::1');
  });
});
