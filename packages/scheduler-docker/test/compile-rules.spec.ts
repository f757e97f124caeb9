import { BLOCKED_RANGES, cacheVolumeName, egressChainName, egressRules, ipv4Nameservers, stackImageCommand } from '../src';
import { limitedOutput } from '../src/build-output';

describe('the build network rules', () => {
  it('lets replies and DNS to the resolvers through, then rejects every blocked range', () => {
    const chain = egressChainName('svc-build0');
    expect(chain).toBe('SVC-EGRESS-svc-build0');
    const rules = egressRules('svc-build0', ['10.255.255.53'], ['192.0.2.0/24']);
    expect(rules.slice(0, 3)).toEqual([
      [chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN'],
      [chain, '-d', '10.255.255.53', '-p', 'udp', '--dport', '53', '-j', 'RETURN'],
      [chain, '-d', '10.255.255.53', '-p', 'tcp', '--dport', '53', '-j', 'RETURN'],
    ]);
    const rejected = rules.slice(3).map((rule) => rule[2]);
    expect(rejected).toEqual([...BLOCKED_RANGES, '192.0.2.0/24']);
    expect(rejected).toEqual(expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8']));
    expect(rules.slice(3).every((rule) => rule.slice(-2).join(' ') === '-j REJECT')).toBe(true);
  });

  it("lets the operator's destinations (BUILD_NETWORK_ALLOW) through after DNS and before any blocked range", () => {
    const chain = egressChainName('svc-build0');
    const rules = egressRules('svc-build0', ['10.255.255.53'], [], [{ cidr: '10.1.2.3/32', port: 4873 }]);
    expect(rules[3]).toEqual([chain, '-d', '10.1.2.3/32', '-p', 'tcp', '--dport', '4873', '-j', 'RETURN']);
    expect(rules.slice(4).every((rule) => rule.slice(-2).join(' ') === '-j REJECT')).toBe(true);
    expect(() => egressRules('svc-build0', [], [], [{ cidr: '10.1.2.3', port: 80 }])).toThrow('unusable build destination range');
    expect(() => egressRules('svc-build0', [], [], [{ cidr: '10.1.2.3/32', port: 0 }])).toThrow('unusable build destination port 0');
  });

  it('keeps a chain name within the 28 characters iptables allows', () => {
    expect(egressChainName('a-very-long-bridge-name').length).toBeLessThanOrEqual(28);
  });

  it('reads the IPv4 name servers of a resolv.conf, leaving loopback ones (queried from the engine itself) out', () => {
    expect(ipv4Nameservers('# comment\nnameserver 10.255.255.53\nnameserver 127.0.0.53\nnameserver ::1\nsearch example\n nameserver 192.0.2.9 \n')).toEqual(['10.255.255.53', '192.0.2.9']);
  });
});

describe('build output and names', () => {
  it('forwards lines up to the byte limit, cuts long lines, then says the rest is left out once', () => {
    const seen: string[] = [];
    const say = limitedOutput((line) => seen.push(line), 30);
    say('first line');
    say('y'.repeat(2500));
    say('never');
    expect(seen).toEqual(['first line', '(further build output left out)']);
    const long: string[] = [];
    limitedOutput((line) => long.push(line), 10_000)('z'.repeat(2500));
    expect(long).toEqual([`${'z'.repeat(2000)}...`]);
  });

  it('names one cache volume per app uuid and refuses a uuid that is no name', () => {
    expect(cacheVolumeName('0b7c2d3e-1111-4222-8333-444455556666')).toBe('svc-cache-0b7c2d3e-1111-4222-8333-444455556666');
    expect(() => cacheVolumeName('../x')).toThrow(/unusable app uuid/);
  });

  it('gives the exact command that makes the stack image, quoted for a shell', () => {
    expect(stackImageCommand({ image: 'svc/stack:24', dockerHost: null, script: '/srv/svc/scripts/make-stack-image.sh' })).toBe('/srv/svc/scripts/make-stack-image.sh svc/stack:24');
    expect(stackImageCommand({ image: 'svc/stack:24', dockerHost: 'unix:///run/my docker.sock', script: '/s.sh' })).toBe("DOCKER_HOST='unix:///run/my docker.sock' /s.sh svc/stack:24");
  });
});
