import { buildEgressRules, buildJump, resolversOf } from '../src/build-egress';

describe('resolversOf', () => {
  it('reads the name servers by family, drops a scope and duplicates, and ignores comments and other options', () => {
    const text = '# nameserver 1.1.1.1\nsearch example.com\nnameserver 10.255.255.53\n  nameserver fe80::1%eth0\nnameserver 10.255.255.53\noptions ndots:2\nnameserver not-an-address\n';
    expect(resolversOf(text)).toEqual({ ipv4: ['10.255.255.53'], ipv6: ['fe80::1'] });
    expect(resolversOf('')).toEqual({ ipv4: [], ipv6: [] });
  });
});

describe('buildEgressRules', () => {
  const rules = buildEgressRules('SVC_BUILD_1', 4, ['10.255.255.53']).map((rule) => rule.join(' '));
  const index = (text: string): number => rules.findIndex((rule) => rule.includes(text));

  it('lets DNS to the resolvers through, on port 53 only, before any private range is refused', () => {
    expect(rules).toContain('-A SVC_BUILD_1 -d 10.255.255.53 -p udp --dport 53 -j RETURN');
    expect(rules).toContain('-A SVC_BUILD_1 -d 10.255.255.53 -p tcp --dport 53 -j RETURN');
    expect(index('10.255.255.53')).toBeLessThan(index('-d 10.0.0.0/8'));
    expect(rules.filter((rule) => rule.includes('RETURN') && !rule.includes('ESTABLISHED'))).toHaveLength(2);
  });

  it("refuses every address of this machine on every port, and the private, CGNAT, link-local and loopback ranges", () => {
    expect(rules).toContain('-A SVC_BUILD_1 -m addrtype --dst-type LOCAL -j REJECT');
    expect(rules.some((rule) => rule.includes('--dport') && rule.includes('LOCAL'))).toBe(false);
    for (const range of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '127.0.0.0/8']) {
      expect(rules).toContain(`-A SVC_BUILD_1 -d ${range} -j REJECT`);
    }
    const v6 = buildEgressRules('SVC_BUILD_1', 6, []).map((rule) => rule.join(' '));
    for (const range of ['::1/128', '::/128', 'fc00::/7', 'fe80::/10', '::ffff:0:0/96']) expect(v6).toContain(`-A SVC_BUILD_1 -d ${range} -j REJECT`);
    expect(v6.some((rule) => rule.includes('10.0.0.0/8'))).toBe(false);
  });

  it("accepts the operator's destinations (BUILD_NETWORK_ALLOW) before this machine and the private ranges are refused, in IPv4 only", () => {
    const allowed = [{ cidr: '192.0.2.2/32', port: 4873 }, { cidr: '10.8.0.0/16', port: null }];
    const withMirrors = buildEgressRules('SVC_BUILD_1', 4, ['10.255.255.53'], allowed).map((rule) => rule.join(' '));
    const at = (text: string): number => withMirrors.findIndex((rule) => rule.includes(text));
    expect(withMirrors).toContain('-A SVC_BUILD_1 -d 192.0.2.2/32 -p tcp --dport 4873 -j ACCEPT');
    expect(withMirrors).toContain('-A SVC_BUILD_1 -d 10.8.0.0/16 -j ACCEPT');
    expect(at('192.0.2.2/32')).toBeLessThan(at('--dst-type LOCAL'));
    expect(at('10.8.0.0/16 -j ACCEPT')).toBeLessThan(at('-d 10.0.0.0/8'));
    expect(buildEgressRules('SVC_BUILD_1', 6, [], allowed).some((rule) => rule.includes('ACCEPT'))).toBe(false);
    expect(() => buildEgressRules('SVC_BUILD_1', 4, [], [{ cidr: '10.0.0.0/8\n-A OUTPUT -j ACCEPT', port: null }])).toThrow('unusable build destination range');
  });

  it('applies to the uids of the range that carry the build group', () => {
    expect(buildJump('SVC_BUILD_300', { from: 300, to: 399 }, 299)).toEqual([
      'OUTPUT', '-m', 'owner', '--uid-owner', '300-399', '--gid-owner', '299', '--suppl-groups', '-j', 'SVC_BUILD_300',
    ]);
  });
});
