import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BLOCKED_RANGES,
  applySteps,
  EngineIptables,
  LocalIptables,
  buildGuardSteps,
  buildUnguardSteps,
  createEngine,
  egressChainName,
  failureOf,
  guardChainName,
  guardHostFromBridge,
  guardRunner,
  helperContainerSpec,
  hostGuardSteps,
  iptablesScript,
  outcomesOf,
  unguardBuildBridge,
  unguardHostFromBridge,
} from '../src';
import { emptyTable, fakeIptables, type FakeTable } from './support/fake-iptables';

// Each command of the fake is a node process: a guard's script starts some thirty.
jest.setTimeout(60_000);

describe('the guards as iptables steps', () => {
  it('a host guard: its chain made when missing, flushed, replies and allowed ports accepted, the rest dropped, one jump from INPUT', () => {
    const chain = guardChainName('svc-apps0');
    expect(hostGuardSteps('svc-apps0', [8080, 8080, 8443])).toEqual([
      { kind: 'must', args: ['-N', chain], unless: [['-S', chain]] },
      { kind: 'must', args: ['-F', chain] },
      { kind: 'must', args: ['-A', chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT'] },
      { kind: 'must', args: ['-A', chain, '-p', 'tcp', '--dport', '8080', '-j', 'ACCEPT'] },
      { kind: 'must', args: ['-A', chain, '-p', 'tcp', '--dport', '8443', '-j', 'ACCEPT'] },
      { kind: 'must', args: ['-A', chain, '-j', 'DROP'] },
      { kind: 'must', args: ['-I', 'INPUT', '1', '-i', 'svc-apps0', '-j', chain], unless: [['-C', 'INPUT', '-i', 'svc-apps0', '-j', chain]] },
    ]);
  });

  it("a build guard with the operator's destinations: a destination on this host accepted in the host guard before its DROP, and let through the egress chain", () => {
    const steps = buildGuardSteps('svc-build0', [], [], [{ cidr: '192.0.2.2/32', port: 4873 }]).map((step) => step.args.join(' '));
    const host = guardChainName('svc-build0');
    expect(steps.indexOf(`-A ${host} -d 192.0.2.2/32 -p tcp --dport 4873 -j ACCEPT`)).toBeGreaterThan(-1);
    expect(steps.indexOf(`-A ${host} -d 192.0.2.2/32 -p tcp --dport 4873 -j ACCEPT`)).toBeLessThan(steps.indexOf(`-A ${host} -j DROP`));
    expect(steps).toContain(`-A ${egressChainName('svc-build0')} -d 192.0.2.2/32 -p tcp --dport 4873 -j RETURN`);
  });

  it('a build guard: the host guard with no port, then the egress chain jumped to from DOCKER-USER, or FORWARD without it', () => {
    const steps = buildGuardSteps('svc-build0', ['10.255.255.53'], ['203.0.113.0/24']);
    const egress = egressChainName('svc-build0');
    expect(steps.filter((step) => step.args.includes('--dport') && step.args[1] === guardChainName('svc-build0'))).toEqual([]);
    expect(steps.map((step) => step.args.join(' '))).toEqual(
      expect.arrayContaining([
        `-A ${egress} -d 10.255.255.53 -p udp --dport 53 -j RETURN`,
        `-A ${egress} -d 203.0.113.0/24 -j REJECT`,
        ...BLOCKED_RANGES.map((range) => `-A ${egress} -d ${range} -j REJECT`),
      ]),
    );
    expect(steps.slice(-2)).toEqual([
      { kind: 'must', args: ['-I', 'DOCKER-USER', '1', '-i', 'svc-build0', '-j', egress], when: [['-S', 'DOCKER-USER']], unless: [['-C', 'DOCKER-USER', '-i', 'svc-build0', '-j', egress]] },
      { kind: 'must', args: ['-I', 'FORWARD', '1', '-i', 'svc-build0', '-j', egress], unless: [['-S', 'DOCKER-USER'], ['-C', 'FORWARD', '-i', 'svc-build0', '-j', egress]] },
    ]);
  });

  it('refuses a bridge name iptables would misread', () => {
    expect(() => hostGuardSteps('br; rm -rf /')).toThrow('unusable bridge name');
    expect(() => buildUnguardSteps('a-name-longer-than-15')).toThrow('unusable bridge name');
  });

  it('the script: each argument single-quoted, conditions as checks, a failed must step ends it with status 1', () => {
    const script = iptablesScript(
      [
        { kind: 'must', args: ['-N', "it's"], unless: [['-S', "it's"]] },
        { kind: 'may', args: ['-X', 'A'], when: [['-S', 'A']] },
        { kind: 'repeat', args: ['-D', 'INPUT', '-j', 'A'] },
      ],
      ['chroot', '/host', 'iptables', '-w'],
    );
    expect(script).toContain(`out=$('chroot' '/host' 'iptables' '-w' "$@" 2>&1); rc=$?`);
    expect(script).toContain(`if ! ok '-S' 'it'\\''s'; then run 0 '-N' 'it'\\''s' || exit 1; fi`);
    expect(script).toContain(`if ok '-S' 'A'; then run 1 '-X' 'A' || :; fi`);
    expect(script).toContain(`while [ $n -lt 64 ] && run 2 '-D' 'INPUT' '-j' 'A'; do`);
    expect(script.trimEnd().endsWith('exit 0')).toBe(true);
  });

  it("reads the script's output: each step's lines and its last status", () => {
    const outcomes = outcomesOf(['o 0 line one', 'o 0 line two', 'r 0 0', 'r 2 0', 'o 2 iptables: Bad rule', 'r 2 1', 'noise', 'o 3 Permission denied\r', 'r 3 4'].join('\n'));
    expect(outcomes).toEqual([
      { step: 0, ok: true, output: 'line one\nline two' },
      { step: 2, ok: false, output: 'iptables: Bad rule' },
      { step: 3, ok: false, output: 'Permission denied' },
    ]);
    const steps = [{ kind: 'must' as const, args: ['-S'] }, { kind: 'may' as const, args: [] }, { kind: 'repeat' as const, args: ['-D', 'X'] }, { kind: 'must' as const, args: ['-N', 'X'] }];
    expect(failureOf(steps, outcomes, 'here')?.message).toBe('iptables -N X (here): Permission denied');
    expect(failureOf(steps, outcomes.slice(0, 2), 'here')).toBeNull();
  });
});

describe('the guards run by a script on a fake iptables', () => {
  let dir: string;
  let fake: Awaited<ReturnType<typeof fakeIptables>>;
  let runner: LocalIptables;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-fake-iptables-'));
    fake = await fakeIptables(dir, emptyTable(true));
    runner = new LocalIptables(fake.command);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const lines = (table: FakeTable): string[] => Object.entries(table.chains).flatMap(([chain, rules]) => [`chain ${chain}`, ...rules.map((rule) => `-A ${chain} ${rule}`)]);

  it('installs a host guard once however often it runs, and its removal leaves the table as it was', async () => {
    const before = lines(fake.table());
    await guardHostFromBridge('svct0', [8080], runner);
    await guardHostFromBridge('svct0', [8080], runner);
    const chain = guardChainName('svct0');
    expect(fake.table().chains.INPUT).toEqual([`-i svct0 -j ${chain}`]);
    expect(fake.table().chains[chain]).toEqual(['-m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT', '-p tcp --dport 8080 -j ACCEPT', '-j DROP']);
    await unguardHostFromBridge('svct0', runner);
    expect(lines(fake.table())).toEqual(before);
    // Removing what is not there is fine.
    await unguardHostFromBridge('svct0', runner);
  });

  it('removes every copy of a jump, and both guards of a build bridge in one run', async () => {
    await applySteps(runner, buildGuardSteps('svcb0', ['192.0.2.53'], []));
    const table = fake.table();
    table.chains.INPUT?.push(`-i svcb0 -j ${guardChainName('svcb0')}`);
    await fake.set(table);
    expect(fake.table().chains['DOCKER-USER']).toEqual([`-i svcb0 -j ${egressChainName('svcb0')}`]);
    await unguardBuildBridge('svcb0', runner);
    expect(fake.table()).toEqual(emptyTable(true));
  });

  it('jumps from FORWARD where the engine keeps no DOCKER-USER chain', async () => {
    await fake.set(emptyTable(false));
    await applySteps(runner, buildGuardSteps('svcb0', [], []));
    expect(fake.table().chains.FORWARD).toEqual([`-i svcb0 -j ${egressChainName('svcb0')}`]);
    await unguardBuildBridge('svcb0', runner);
    expect(fake.table()).toEqual(emptyTable(false));
  });

  it('auto: the iptables of this machine when the engine is on a local socket and that iptables works, else a helper container', async () => {
    const docker = createEngine('unix:///nonexistent/docker.sock');
    const local = guardRunner({ docker, image: 'img', localCommand: fake.command });
    expect(await local.run([{ kind: 'must', args: ['-S', 'INPUT'] }])).toEqual([{ step: 0, ok: true, output: '-P INPUT ACCEPT' }]);
    expect(local.where).toBe('on this machine');
    await fake.set({ ...emptyTable(true), deny: true });
    const engine = guardRunner({ docker, image: 'img', localCommand: fake.command });
    await expect(engine.run([{ kind: 'must', args: ['-S', 'INPUT'] }])).rejects.toThrow('the iptables helper container (image img) could not be made');
    expect(engine.where).toBe('through a helper container of img on the engine');
  });

  it("without the privilege, installing and removing fail with iptables' message and where it ran", async () => {
    await fake.set({ ...emptyTable(true), deny: true });
    await expect(guardHostFromBridge('svct0', [], runner)).rejects.toThrow(`iptables -N ${guardChainName('svct0')} (on this machine): iptables v1.8.9 (fake): Permission denied (you must be root)`);
    await expect(unguardHostFromBridge('svct0', runner)).rejects.toThrow('iptables -S INPUT (on this machine): iptables v1.8.9 (fake): Permission denied');
  });
});

describe('the helper container that runs the guards on the engine', () => {
  it("runs the script as the host's root with only iptables' capabilities, the host's root read-only and its /run writable", () => {
    const spec = helperContainerSpec('localhost/svc-stack:latest', 'exit 0');
    expect(spec).toMatchObject({ Image: 'localhost/svc-stack:latest', Entrypoint: ['/bin/sh', '-c'], Cmd: ['exit 0'], User: '0:0' });
    expect(spec.HostConfig).toMatchObject({
      NetworkMode: 'host',
      UsernsMode: 'host',
      CapDrop: ['ALL'],
      CapAdd: ['NET_ADMIN', 'NET_RAW', 'SYS_CHROOT'],
      Binds: ['/:/host:ro', '/run:/host/run'],
    });
    expect(spec.HostConfig?.Privileged).toBeUndefined();
  });

  it('is what the runner uses when told to, and when the engine is not on a local socket', async () => {
    const remote = createEngine('tcp://127.0.0.1:9');
    expect(guardRunner({ docker: remote, choice: 'engine', image: 'img' })).toBeInstanceOf(EngineIptables);
    expect(guardRunner({ docker: remote, choice: 'local', image: 'img' })).toBeInstanceOf(LocalIptables);
    const auto = guardRunner({ docker: remote, image: 'localhost/svc-stack:latest' });
    await expect(auto.run([{ kind: 'must', args: ['-S'] }])).rejects.toThrow('the iptables helper container (image localhost/svc-stack:latest) could not be made');
    expect(auto.where).toBe('through a helper container of localhost/svc-stack:latest on the engine');
  });
});
