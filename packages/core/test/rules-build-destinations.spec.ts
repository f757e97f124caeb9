import { buildDestinationMatch } from '@svc/core';

describe('buildDestinationMatch', () => {
  it('matches a range, and its TCP port when it names one', () => {
    expect(buildDestinationMatch({ cidr: '10.1.2.3/32', port: 4873 })).toEqual(['-d', '10.1.2.3/32', '-p', 'tcp', '--dport', '4873']);
    expect(buildDestinationMatch({ cidr: '10.8.0.0/16', port: null })).toEqual(['-d', '10.8.0.0/16']);
    expect(buildDestinationMatch({ cidr: '0.0.0.0/0', port: 65535 })).toEqual(['-d', '0.0.0.0/0', '-p', 'tcp', '--dport', '65535']);
  });

  it.each([
    ['no prefix', '10.1.2.3', null],
    ['a prefix over 32', '10.1.2.3/33', null],
    ['an octet over 255', '10.1.2.256/32', null],
    ['a name', 'mirror.internal/32', null],
    ['another rule after it', '10.0.0.0/8 -j ACCEPT', null],
    ['a line break', '10.0.0.0/8\n-A OUTPUT -j ACCEPT', null],
    ['two prefixes', '10.0.0.0/8/8', null],
  ])('refuses a range with %s', (_what, cidr, port) => {
    expect(() => buildDestinationMatch({ cidr, port })).toThrow(/^unusable build destination range/);
  });

  it.each([0, 65536, 1.5, Number.NaN])('refuses port %s', (port) => {
    expect(() => buildDestinationMatch({ cidr: '10.1.2.3/32', port })).toThrow(/^unusable build destination port/);
  });
});
